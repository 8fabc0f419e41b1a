# Warnings on and clean for our own targets.
function(llm2hef_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
endfunction()

# Adapters: hidden visibility, nothing left unresolved at link time.
function(llm2hef_add_adapter name)
  cmake_parse_arguments(A "" "" "SOURCES" ${ARGN})
  add_library(${name} MODULE ${A_SOURCES})
  llm2hef_warnings(${name})
  target_link_libraries(${name} PRIVATE llm2hef::sdk)
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY "${LLM2HEF_BUILD_ADAPTER_DIR}")
  target_link_options(${name} PRIVATE -Wl,--no-undefined)
  install(TARGETS ${name} LIBRARY DESTINATION ${LLM2HEF_INSTALL_ADAPTER_SUBDIR})
endfunction()
