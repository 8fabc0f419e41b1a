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
# The Maintainer field (Debian policy 5.6.2: a name and a working address):
# whoever builds and publishes the packages sets it; this project has no
# address of its own to put there. The default says so, and
# tools/check-packages.sh reports it.
set(LLM2HEF_DEB_MAINTAINER "unset maintainer <maintainer-not-set@invalid>"
    CACHE STRING "Maintainer field of the Debian packages: Name <address>")
if(LLM2HEF_DEB_MAINTAINER MATCHES "@invalid>$")
  message(STATUS "Debian packages: Maintainer not set (-DLLM2HEF_DEB_MAINTAINER=\"Name <address>\" before publishing)")
endif()
set(CPACK_PACKAGE_CONTACT "${LLM2HEF_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # NAME_VERSION-REVISION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Each package's Description is its component's (CPACK_DEBIAN_<COMPONENT>_DESCRIPTION,
# first line the synopsis). The binaries are stripped as they are installed
# (60 MB instead of 210 MB installed for RelWithDebInfo), with no -dbgsym
# package: CPack's split (CPACK_DEBIAN_<COMPONENT>_DEBUGINFO_PACKAGE) works
# only on unstripped files and strips them after the install step, so the
# adapters' index.json, written by the last install step, would record the
# checksums of files the package no longer holds (registry verify would fail
# and llm2hef refuse them). For symbols, build from source (docs/install.md).
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
# The completions are installed for bash-completion to load.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "bash-completion")
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

# Each package's copyright file (Debian policy 12.5): llm2hef's, with the
# header-only libraries compiled into the binaries.
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian-copyright DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/llm2hef
        RENAME copyright COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian-copyright DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/llm2hef-dev
        RENAME copyright COMPONENT dev)

include(CPack)
