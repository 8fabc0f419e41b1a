# llm2hef_add_adapter(name SOURCES src... [OUTPUT_DIRECTORY dir] [INSTALL_DESTINATION dir])
#
# Builds one adapter plugin: a MODULE library named exactly `name`.so (no
# "lib" prefix), linked against llm2hef::families and llm2hef::sdk, with hidden visibility and
# -Wl,--no-undefined so an unresolved symbol fails at link time, not at load.
#
# Shared by the llm2hef tree (cmake/Warnings.cmake includes it) and by the
# installed CMake package (find_package(llm2hef_sdk CONFIG) includes it), so
# first-party and out-of-tree adapters are built the same way.
#
#   OUTPUT_DIRECTORY     where the .so lands in the build tree. Default: the
#                        llm2hef build tree's adapters/ folder in-tree,
#                        otherwise the calling project's binary dir.
#   INSTALL_DESTINATION  where `cmake --install` puts it. Default:
#                        <libdir>/llm2hef/adapters, the folder an llm2hef
#                        installed under the same prefix searches.
include_guard(GLOBAL)
include(GNUInstallDirs)

function(llm2hef_add_adapter name)
  cmake_parse_arguments(A "" "OUTPUT_DIRECTORY;INSTALL_DESTINATION" "SOURCES" ${ARGN})
  if(NOT A_SOURCES)
    message(FATAL_ERROR "llm2hef_add_adapter(${name}): SOURCES is required")
  endif()
  if(A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "llm2hef_add_adapter(${name}): unknown arguments: ${A_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET llm2hef::sdk)
    message(FATAL_ERROR "llm2hef_add_adapter(${name}): llm2hef::sdk is not defined "
                        "(call find_package(llm2hef_sdk CONFIG REQUIRED) first)")
  endif()

  if(NOT A_OUTPUT_DIRECTORY)
    if(DEFINED LLM2HEF_BUILD_ADAPTER_DIR)      # inside the llm2hef tree
      set(A_OUTPUT_DIRECTORY "${LLM2HEF_BUILD_ADAPTER_DIR}")
    else()
      set(A_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}")
    endif()
  endif()
  if(NOT A_INSTALL_DESTINATION)
    if(DEFINED LLM2HEF_INSTALL_ADAPTER_SUBDIR)
      set(A_INSTALL_DESTINATION "${LLM2HEF_INSTALL_ADAPTER_SUBDIR}")
    else()
      set(A_INSTALL_DESTINATION "${CMAKE_INSTALL_LIBDIR}/llm2hef/adapters")
    endif()
  endif()

  # Installed next to libllm2hef_sdk.so: <libdir>/llm2hef/adapters -> <libdir>.
  # Only $ORIGIN-relative: the installed .so is what gets published, and an
  # absolute path of the machine that built it (the SDK's libdir) means
  # nothing on a user's machine. Loaded by the host, the SDK is already in
  # the process; the build tree keeps CMake's own build RPATH.
  set(rpath "")
  if(NOT IS_ABSOLUTE "${A_INSTALL_DESTINATION}")
    file(RELATIVE_PATH up "/_/${A_INSTALL_DESTINATION}" "/_/${CMAKE_INSTALL_LIBDIR}")
    list(APPEND rpath "$ORIGIN/${up}")
  endif()

  add_library(${name} MODULE ${A_SOURCES})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  # The families library first (static: only the family code the adapter
  # calls is linked in), then the SDK it calls into.
  if(TARGET llm2hef::families)
    target_link_libraries(${name} PRIVATE llm2hef::families)
  endif()
  target_link_libraries(${name} PRIVATE llm2hef::sdk)
  target_compile_features(${name} PRIVATE cxx_std_20)
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY "${A_OUTPUT_DIRECTORY}"
    INSTALL_RPATH "${rpath}")
  # Except in llm2hef's own clang sanitizer build: clang links the ASan/UBSan
  # runtime into the executable only, so an instrumented module leaves those
  # symbols for the host to resolve at load.
  if(NOT (LLM2HEF_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang"))
    target_link_options(${name} PRIVATE -Wl,--no-undefined)
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION "${A_INSTALL_DESTINATION}")
  if(DEFINED LLM2HEF_BUILD_ADAPTER_DIR)
    # In the llm2hef tree: listed in the first-party index (adapters/CMakeLists.txt).
    set_property(GLOBAL APPEND PROPERTY LLM2HEF_FIRST_PARTY_ADAPTERS ${name})
  endif()
endfunction()
