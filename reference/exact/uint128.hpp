// The 128-bit unsigned integer of GCC and Clang, named once (__extension__ keeps -Wpedantic quiet
// about a type ISO C++ does not have).
#pragma once

namespace ampbench::reference {
__extension__ typedef unsigned __int128 uint128;
}  // namespace ampbench::reference
