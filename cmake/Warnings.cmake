# Warnings on and clean for our own targets.
function(llm2hef_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  if(LLM2HEF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Adapters: hidden visibility, nothing left unresolved at link time.
# llm2hef_add_adapter(name SOURCES ...) lives in its own file because the
# installed CMake package (llm2hef_sdkConfig.cmake) ships it too.
include(${CMAKE_CURRENT_LIST_DIR}/Llm2hefAdapter.cmake)
