// cove: the host shim's CLI (serve, key, sandbox, template). Filled in by the lifecycle work.
#include <cstdio>
int main() {
  std::fprintf(stderr, "cove: not assembled yet\n");
  return 1;
}
