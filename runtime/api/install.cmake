# `cmake --install`: libfusert.so, the public headers (fusert/*.h, and nothing of the planner or
# the executor), a CMake package (find_package(fusert CONFIG REQUIRED) -> fusert::fusert) and a
# pkg-config file. Both are relocatable: the prefix is found from where they are installed.
include(CMakePackageConfigHelpers)
set(FUSERT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fusert)
install(TARGETS fusert_shared EXPORT fusertTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/runtime/api/fusert DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT fusertTargets NAMESPACE fusert:: DESTINATION ${FUSERT_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/runtime/api/fusertConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/fusertConfig.cmake INSTALL_DESTINATION ${FUSERT_CMAKE_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/fusertConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/fusertConfig.cmake ${CMAKE_BINARY_DIR}/fusertConfigVersion.cmake
        DESTINATION ${FUSERT_CMAKE_DIR})
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/runtime/api/fusert.pc.in ${CMAKE_BINARY_DIR}/fusert.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/fusert.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
