// Which of fusert's symbols libfusert.so exports: the public API's (FUSERT_API) and nothing
// else; every other symbol of the library is hidden (-fvisibility=hidden), so the planner's and
// the executor's internals are not part of the ABI an application links against.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
/// Marks a public class or function as exported from libfusert.so.
#define FUSERT_API __attribute__((visibility("default")))
#else
#define FUSERT_API
#endif
