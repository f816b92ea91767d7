// Proof that a sanitizer build reports what it is meant to: each argument commits one defect the
// sanitizers must stop (tests/sanitize/CMakeLists.txt expects their reports).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const volatile int n = 16;  // volatile: the compiler cannot see the defects coming
  if (std::strcmp(argv[1], "heap-overflow") == 0) {
    char* p = static_cast<char*>(std::malloc(n));
    std::memset(p, 0, n + 1);
    std::printf("%d\n", p[0]);
    std::free(p);
  } else if (std::strcmp(argv[1], "leak") == 0) {
    volatile char* p = static_cast<char*>(std::malloc(n));
    p[0] = 1;
    p = nullptr;
  } else if (std::strcmp(argv[1], "signed-overflow") == 0) {
    volatile int big = std::numeric_limits<int>::max();
    std::printf("%d\n", big + n);
  } else {
    return 2;
  }
  return 0;
}
