# Debian packages with CPack (docs/install.md):
#
#   cpack --config build/CPackConfig.cmake -B build/packages
#
# writes two packages from an already-built tree:
#   llm2hef      the host (/usr/bin/llm2hef), libllm2hef_sdk.so.<soversion>
#                (the host and every adapter link it), the first-party
#                adapters and their index (/usr/lib/llm2hef/adapters), the
#                schemas, the keys folder and the docs;
#   llm2hef-dev  the adapter SDK: headers, the libllm2hef_sdk.so link, the
#                CMake package (find_package(llm2hef_sdk)) and pkg-config file.
# Install rules without a component belong to `runtime` (llm2hef);
# sdk/CMakeLists.txt puts the SDK's development files in `dev`.
#
# Run-time dependencies are computed by dpkg-shlibdeps (dpkg-dev) from the
# installed files. For a cross build, set LLM2HEF_DEB_ARCHITECTURE (e.g.
# arm64); it defaults to what the toolchain's multiarch triplet names, else to
# `dpkg --print-architecture`.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME llm2hef)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Maintainer field: whoever builds and publishes the packages sets it.
set(LLM2HEF_DEB_MAINTAINER "llm2hef <dev@llm2hef>" CACHE STRING "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${LLM2HEF_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # NAME_VERSION-REVISION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Each package's Description is its component's (CPACK_DEBIAN_<COMPONENT>_DESCRIPTION,
# first line the synopsis). Without debug information: 60 MB instead of 210 MB installed for RelWithDebInfo.
set(CPACK_STRIP_FILES ON)

if(NOT LLM2HEF_DEB_ARCHITECTURE)
  set(_llm2hef_deb_arch_of_aarch64-linux-gnu arm64)
  set(_llm2hef_deb_arch_of_x86_64-linux-gnu amd64)
  set(_llm2hef_deb_arch_of_arm-linux-gnueabihf armhf)
  if(CMAKE_LIBRARY_ARCHITECTURE AND DEFINED _llm2hef_deb_arch_of_${CMAKE_LIBRARY_ARCHITECTURE})
    set(LLM2HEF_DEB_ARCHITECTURE ${_llm2hef_deb_arch_of_${CMAKE_LIBRARY_ARCHITECTURE}})
  endif()
endif()
if(LLM2HEF_DEB_ARCHITECTURE)
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${LLM2HEF_DEB_ARCHITECTURE})
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME llm2hef)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "Hugging Face decoder LLMs to Hailo-10H DFC exports
llm2hef reads a Hugging Face checkpoint folder or a GGUF file of a decoder
LLM and writes what Hailo's Dataflow Compiler and the Hailo-10H genai
runtime need. It also checks and repairs HARs and HEFs and packages models
for hailo-ollama. Includes the first-party adapters.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME llm2hef-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The headers include <nlohmann/json.hpp>; adapters must be built with the
# compiler family and major version llm2hef was built with.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "llm2hef (= ${PROJECT_VERSION}-1), nlohmann-json3-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake, g++, pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "SDK for llm2hef adapter plugins
Headers, CMake package (find_package(llm2hef_sdk CONFIG)) and pkg-config
file to build third-party llm2hef adapters (one model family each) against
the installed llm2hef.")
# Nothing in llm2hef-dev is a binary: no dpkg-shlibdeps run for it.
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)

include(CPack)
