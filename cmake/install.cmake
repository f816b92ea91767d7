# `cmake --install build --prefix P`: every detkit library (lib/), its public headers
# (include/detkit/...), the `detkit` command (bin/) and a CMake package, so that
#   find_package(detkit 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE detkit::predictor)   # or detkit::detkit: everything
# works from another project (examples/predict). Each folder's library is detkit::<folder>
# (detkit::utils ... detkit::engine), plus detkit::predictor (DefaultPredictor without the trainer).
include(CMakePackageConfigHelpers)

get_property(detkit_libraries GLOBAL PROPERTY DETKIT_LIBRARIES)
add_library(detkit_all INTERFACE)
target_link_libraries(detkit_all INTERFACE ${detkit_libraries})
set_target_properties(detkit_all PROPERTIES EXPORT_NAME detkit)

install(TARGETS ${detkit_libraries} detkit_all EXPORT detkitTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS detkit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/detkit/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/detkit
        FILES_MATCHING PATTERN "*.h")

set(detkit_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/detkit)
install(EXPORT detkitTargets NAMESPACE detkit:: DESTINATION ${detkit_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/detkitConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/detkitConfig.cmake
                              INSTALL_DESTINATION ${detkit_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/detkitConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/detkitConfig.cmake ${PROJECT_BINARY_DIR}/detkitConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/system_headers_first.cmake
        DESTINATION ${detkit_cmake_dir})
