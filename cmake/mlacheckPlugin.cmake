# mlacheck_add_plugin(name source... [WRAP_REFERENCE]): a plugin for `mlacheck run|ops --engine
# plugin:lib<name>.so` (harness/plugins/README.md). A dlopen-able MODULE that exports only its
# register symbols (hidden visibility); WRAP_REFERENCE links the reference engine into it and keeps
# the reference's symbols private to the plugin (--exclude-libs), as the in-tree examples do.
function(mlacheck_add_plugin name)
  cmake_parse_arguments(P "WRAP_REFERENCE" "" "" ${ARGN})
  add_library(${name} MODULE ${P_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES C_VISIBILITY_PRESET hidden)
  target_link_options(${name} PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined)
  if(P_WRAP_REFERENCE)
    target_link_libraries(${name} PRIVATE mlacheck::ref m)
  else()
    target_link_libraries(${name} PRIVATE mlacheck::plugin_headers m)
  endif()
endfunction()
