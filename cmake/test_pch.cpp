// The target that builds the test programs' shared precompiled header (CMakeLists.txt).
