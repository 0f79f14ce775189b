// testpoint.h — named points where a test can stop this process, for the cases that must
// happen at one moment of a long operation (tests/test_import.sh, tests/test_data.sh):
//   DDPTOK_TEST_KILL_AT=POINT         the process kills itself (SIGKILL) at POINT;
//   DDPTOK_TEST_PAUSE_AT=POINT:FILE   at POINT it creates FILE and waits until FILE is gone
//                                     (at most 60 s), so the test can change the world meanwhile.
// Unset (always, outside the tests) they cost one getenv per point.
#ifndef DDPTOK_TESTPOINT_H
#define DDPTOK_TESTPOINT_H

#ifdef __cplusplus
extern "C" {
#endif

void test_point(const char *point);

#ifdef __cplusplus
}
#endif
#endif
