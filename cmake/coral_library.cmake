# coral_library(NAME [INTERFACE] SOURCES ... DEPENDS ...)
# Declares coral::NAME from folder NAME/: headers under NAME/include, exported
# and installed with the rest of the package.
function(coral_library name)
  cmake_parse_arguments(arg "INTERFACE" "" "SOURCES;DEPENDS" ${ARGN})
  set(target coral_${name})
  if(arg_INTERFACE)
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  else()
    add_library(${target} ${arg_SOURCES})
    set(scope PUBLIC)
  endif()
  add_library(coral::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} ${scope}
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} ${scope} coral_options ${arg_DEPENDS})
  install(TARGETS ${target} EXPORT coral-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
