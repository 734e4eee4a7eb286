// The `onyx` command (placeholder until the session lands).
#include <cstdio>
int main() { std::puts("onyx"); return 0; }
