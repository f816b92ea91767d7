#include "detkit/utils/allocator.h"

#include <malloc.h>

#include <cstdlib>

#include "detkit/utils/large_block_allocator.h"

namespace detkit {

void configure_allocator() {
  auto unset = [](const char* name) { return std::getenv(name) == nullptr; };
  if (unset("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (unset("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (unset("MALLOC_TOP_PAD_")) mallopt(M_TOP_PAD, 256 << 20);
  install_large_block_allocator();
}

}  // namespace detkit
