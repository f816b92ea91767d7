#include "detkit/utils/allocator.h"

#include <malloc.h>

#include <cstdlib>
#include <string>

#include "detkit/utils/large_block_cache.h"

namespace detkit {

void configure_allocator() {
  auto unset = [](const char* name) { return std::getenv(name) == nullptr; };
  if (unset("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (unset("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (unset("MALLOC_TOP_PAD_")) mallopt(M_TOP_PAD, 256 << 20);
  const char* cache = std::getenv("DETKIT_LARGE_BLOCK_CACHE");
  if (cache == nullptr || std::string(cache) != "0") install_large_block_cache();
}

}  // namespace detkit
