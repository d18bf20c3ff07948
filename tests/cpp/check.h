// The C++ tests' one assertion: CHECK(cond) reports file:line and counts, then
// `return check_summary("name");` at the end of main prints and gives the exit status.
#pragma once
#include <cstdio>

inline int failures = 0;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

inline int check_summary(const char* test) {
  if (failures == 0) std::printf("%s: all checks passed\n", test);
  return failures == 0 ? 0 : 1;
}
