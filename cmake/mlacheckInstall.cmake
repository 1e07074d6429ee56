# mlacheckInstall.cmake: `cmake --install` of mlacheck for plugin authors and CI (README.md, "Install").
#   bin/mlacheck                      the CLI; it finds its data in ../share/mlacheck (cli_install.c)
#   lib/libmlacheck.so.1              the C API (harness/include/mlacheck/capi.h), for the Python package
#   lib/libmla_{core,model,ref}.a     the reference (position independent), for plugins that wrap it
#   lib/libmla_harness.a              the harness library (suites, compare, opcheck) for C drivers
#   include/mla*/ include/mlacheck/   the contract and plugin ABIs, the reference's and the harness's headers
#   share/mlacheck/{suites,golden}    what `mlacheck run` reads at run time
#   lib/cmake/mlacheck/               mlacheckConfig.cmake, its version file and the exported targets
#   lib/pkgconfig/mlacheck.pc         headers + the reference libraries; mlacheck-capi.pc: libmlacheck
# Included from the top-level CMakeLists.txt after every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MLA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mlacheck)

# The CLI looks for its data relative to its own location, so a prefix chosen at install time
# (`cmake --install --prefix`, DESTDIR, a moved tree) works.
file(RELATIVE_PATH MLA_INSTALL_DATA_REL ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_DATADIR}/mlacheck)
target_compile_definitions(mlacheck PRIVATE MLA_INSTALL_DATA_REL="${MLA_INSTALL_DATA_REL}")

# mlacheck::plugin_headers: only the include folder (a kernel plugin that wraps nothing needs no library).
add_library(mla_plugin_headers INTERFACE)
target_include_directories(mla_plugin_headers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/reference/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

set_target_properties(mla_plugin_headers PROPERTIES EXPORT_NAME plugin_headers)
set_target_properties(mla_core PROPERTIES EXPORT_NAME core)
set_target_properties(mla_model PROPERTIES EXPORT_NAME model)
set_target_properties(mla_ref PROPERTIES EXPORT_NAME ref)
set_target_properties(mla_harness PROPERTIES EXPORT_NAME harness)
set_target_properties(mlacheck_capi PROPERTIES EXPORT_NAME capi)
set_target_properties(mlacheck PROPERTIES EXPORT_NAME mlacheck)
# system libraries outside the default paths (MLA_DEPS_DIR, MLA_HDF5_ROOT) stay found once installed
set_target_properties(mlacheck mlacheck_capi PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)

set(MLA_EXPORTED mla_plugin_headers mla_core mla_model mla_ref mlacheck_capi mlacheck)
# The harness library of a GPU build carries the GPU engine and its runtime (CUDA::cudart or
# libamdhip64): not exported yet, the CPU build's is (README.md, "Install").
if(NOT MLA_HAVE_GPU)
  list(APPEND MLA_EXPORTED mla_harness)
endif()
install(TARGETS ${MLA_EXPORTED} EXPORT mlacheckTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reference/include/ ${PROJECT_SOURCE_DIR}/harness/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
# suites/ (with rules.tol and calibration/) and golden/ side by side: a suite's HF model paths are
# relative to the suite folder's parent (runner.c open_case_model), its text prompts to the suite file.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/suites ${PROJECT_SOURCE_DIR}/golden
        DESTINATION ${CMAKE_INSTALL_DATADIR}/mlacheck PATTERN "__pycache__" EXCLUDE)
# the CI gate script the docs/ci examples run from the prefix
install(PROGRAMS ${PROJECT_SOURCE_DIR}/docs/ci/gate.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/mlacheck/ci)
install(FILES ${PROJECT_SOURCE_DIR}/harness/plugins/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/mlacheck/plugins)
install(FILES ${PROJECT_SOURCE_DIR}/harness/plugins/example_ref_plugin.c
              ${PROJECT_SOURCE_DIR}/harness/plugins/example_attn_only_plugin.c
        DESTINATION ${CMAKE_INSTALL_DATADIR}/mlacheck/plugins)

# The imported dependencies the static libraries name ($<LINK_ONLY:...> in the exported targets),
# recorded as this build found them; the config file finds them again the same way.
function(mla_dep_paths var target)
  get_target_property(inc ${target} INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(lib ${target} INTERFACE_LINK_LIBRARIES)
  foreach(v inc lib)
    if(NOT ${v})
      set(${v} "")
    endif()
  endforeach()
  set(${var}_INC "${inc}" PARENT_SCOPE)
  set(${var}_LIB "${lib}" PARENT_SCOPE)
endfunction()
mla_dep_paths(MLA_JANSSON PkgConfig::JANSSON)
mla_dep_paths(MLA_OPENBLAS PkgConfig::OPENBLAS)
set(MLA_EXPORT_HARNESS OFF)
if(NOT MLA_HAVE_GPU)
  set(MLA_EXPORT_HARNESS ON)
endif()
set(MLA_EXPORT_HDF5 OFF)
if(HDF5_FOUND)
  set(MLA_EXPORT_HDF5 ON)
endif()
set(MLA_EXPORT_HDF5_ROOT "${MLA_HDF5_ROOT}")

install(EXPORT mlacheckTargets NAMESPACE mlacheck:: DESTINATION ${MLA_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mlacheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mlacheckConfig.cmake INSTALL_DESTINATION ${MLA_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_DATADIR)
# 0.x: a minor version may change the ABIs (attn_op.h, plugin.h carry their own version checks)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mlacheckConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mlacheckConfig.cmake ${PROJECT_BINARY_DIR}/mlacheckConfigVersion.cmake
        ${PROJECT_SOURCE_DIR}/cmake/mlacheckPlugin.cmake DESTINATION ${MLA_CMAKE_DIR})

# pkg-config: prefix relative to the .pc file, so the files stay right under any install prefix.
file(RELATIVE_PATH MLA_PC_PREFIX_REL ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" MLA_PC_PREFIX_REL "${MLA_PC_PREFIX_REL}")
file(RELATIVE_PATH MLA_PC_LIBDIR ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_LIBDIR})
file(RELATIVE_PATH MLA_PC_INCLUDEDIR ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_INCLUDEDIR})
# the reference's dependencies: by module name when pkg-config found them, else as found
set(MLA_PC_REQUIRES "")
set(MLA_PC_DEPLIBS "")
foreach(dep JANSSON OPENBLAS)
  string(TOLOWER ${dep} mod)
  if(${dep}_FOUND)
    list(APPEND MLA_PC_REQUIRES ${mod})
  else()
    list(APPEND MLA_PC_DEPLIBS ${MLA_${dep}_LIB})
  endif()
endforeach()
list(JOIN MLA_PC_REQUIRES ", " MLA_PC_REQUIRES)
list(JOIN MLA_PC_DEPLIBS " " MLA_PC_DEPLIBS)
configure_file(${PROJECT_SOURCE_DIR}/cmake/mlacheck.pc.in ${PROJECT_BINARY_DIR}/mlacheck.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/mlacheck-capi.pc.in ${PROJECT_BINARY_DIR}/mlacheck-capi.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/mlacheck.pc ${PROJECT_BINARY_DIR}/mlacheck-capi.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# install_plugin: install into a scratch prefix, build an out-of-tree plugin with find_package(mlacheck)
# and with pkg-config, gate both with the installed mlacheck run from outside the tree. Not in
# sanitizer builds: the installed static libraries carry no -fsanitize for the consumer's link.
if(NOT MLA_SANITIZE)
  add_test(NAME install_plugin
           COMMAND sh ${PROJECT_SOURCE_DIR}/harness/tests/install/install_test.sh ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/install-test ${CMAKE_INSTALL_LIBDIR} ${CMAKE_GENERATOR})
  set_tests_properties(install_plugin PROPERTIES LABELS "cli;plugin" TIMEOUT 600)
endif()

