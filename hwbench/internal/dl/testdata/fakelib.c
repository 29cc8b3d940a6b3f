/* A tiny shared library for the loader tests: built with the system C
 * compiler during the test, then loaded with dl.Open. */
int fake_add_one(int x) { return x + 1; }
int fake_double(int x) { return 2 * x; }
int fake_version_v2(int x) { return 200 + x; }
