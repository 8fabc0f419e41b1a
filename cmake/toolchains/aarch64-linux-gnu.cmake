# Cross build for 64-bit Arm Debian 12 / Raspberry Pi OS (arm64) on an x86_64
# Debian 12 machine, with Debian's cross compiler and multiarch libraries
# (docs/install.md, "arm64"):
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLM2HEF_BUILD_TESTS=OFF
#
# Libraries and CMake packages come from the :arm64 -dev packages in
# /usr/lib/aarch64-linux-gnu; headers from /usr/include; programs (protoc)
# from the build machine. Installing (and cpack) runs the arm64 llm2hef once
# to index its adapters, under qemu-user (qemu-user-static).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Multiarch: no sysroot; programs are the build machine's, everything else the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config reads the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
find_program(LLM2HEF_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(LLM2HEF_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${LLM2HEF_QEMU_AARCH64}")
endif()
