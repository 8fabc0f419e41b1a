# Every C++ dependency comes from Debian packages (see README).
find_package(Protobuf REQUIRED)          # must precede ONNX: its targets reference protobuf
find_package(ONNX CONFIG REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(spdlog REQUIRED)
find_package(Eigen3 REQUIRED NO_MODULE)
find_package(Boost REQUIRED)             # header-only Boost.DLL
find_package(LibArchive REQUIRED)
find_package(Threads REQUIRED)
find_package(CLI11 CONFIG REQUIRED)      # libcli11-dev: the command-line parser (header-only)
find_package(PkgConfig REQUIRED)
# nettle-dev: SHA-256 of adapter libraries and HEF blobs (registry/src/sha256.cpp).
pkg_check_modules(NETTLE REQUIRED IMPORTED_TARGET nettle)

find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY NAMES xxhash REQUIRED)
add_library(llm2hef_xxhash INTERFACE)
target_include_directories(llm2hef_xxhash INTERFACE ${XXHASH_INCLUDE_DIR})
target_link_libraries(llm2hef_xxhash INTERFACE ${XXHASH_LIBRARY})

# onnx 1.12's headers need these to select the onnx-ml protobuf schema.
add_library(llm2hef_onnx INTERFACE)
target_link_libraries(llm2hef_onnx INTERFACE onnx onnx_proto protobuf::libprotobuf)
target_compile_definitions(llm2hef_onnx INTERFACE ONNX_ML=1 ONNX_NAMESPACE=onnx)

# Boost.DLL without Boost.Filesystem; GCC 12 needs <vector> before library_info.hpp (done in the sources).
add_library(llm2hef_boost_dll INTERFACE)
target_link_libraries(llm2hef_boost_dll INTERFACE Boost::headers ${CMAKE_DL_LIBS})
target_compile_definitions(llm2hef_boost_dll INTERFACE BOOST_DLL_USE_STD_FS)
