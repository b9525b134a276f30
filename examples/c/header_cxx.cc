// SPDX-License-Identifier: MIT OR Apache-2.0
// <ferrostream/meta.h> compiles as C++ (extern "C", the layout's static assertions).
#include <ferrostream/meta.h>

int main()
{
  FerrostreamObject obj = {};
  return ferrostream_abi_version() == FERROSTREAM_ABI_VERSION && obj.label == nullptr ? 0 : 1;
}
