# torch's include folder carries headers of libraries detkit takes from Debian: a header-only
# fmt 12 and protobuf 3.13's headers. That folder is searched (-isystem) before /usr/include, but
# Debian's libspdlog and libfmt are fmt 9's and its libprotobuf is 3.21: fmt's and protobuf's
# headers are taken from Debian's folders first, for detkit's code and torch's headers alike
# (fmt's inline namespaces keep the two fmt versions apart at link time; torch's headers use
# neither where detkit includes them).
set(_first ${CMAKE_BINARY_DIR}/system_headers_first)
file(MAKE_DIRECTORY ${_first})
foreach(_pair "fmt:fmt/format.h" "google:google/protobuf/message.h")
  string(REPLACE ":" ";" _pair ${_pair})
  list(GET _pair 0 _folder)
  list(GET _pair 1 _header)
  find_path(DETKIT_SYSTEM_${_folder}_INCLUDE ${_header} NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH)
  if(DETKIT_SYSTEM_${_folder}_INCLUDE)
    file(CREATE_LINK ${DETKIT_SYSTEM_${_folder}_INCLUDE}/${_folder} ${_first}/${_folder} SYMBOLIC)
  endif()
endforeach()
include_directories(BEFORE ${_first})
