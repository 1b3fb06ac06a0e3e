# SPDX-License-Identifier: MIT
# uninstall.cmake - run by the `uninstall` target (CMakeLists.txt):
# removes every file the last `cmake --install` wrote, as listed in
# MANIFEST (build/install_manifest.txt), then rcuwalk's own directory
# share/doc/rcuwalk if no file is left in it.  Other directories (bin,
# lib, share/man/man1) are left: they may hold other packages' files.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "${MANIFEST} not found: nothing was installed from this build tree "
    "(run cmake --install first, with the same build directory)")
endif()
file(STRINGS "${MANIFEST}" _files)
set(_dirs "")
foreach(_f IN LISTS _files)
  if(IS_SYMLINK "${_f}" OR EXISTS "${_f}")
    message(STATUS "Removing ${_f}")
    file(REMOVE "${_f}")
    if(IS_SYMLINK "${_f}" OR EXISTS "${_f}")
      message(FATAL_ERROR "could not remove ${_f} (permissions?)")
    endif()
  else()
    message(STATUS "Already gone: ${_f}")
  endif()
  if(_f MATCHES "^(.*/share/doc/rcuwalk)/")
    list(APPEND _dirs "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _dirs)
foreach(_d IN LISTS _dirs)
  file(GLOB_RECURSE _left "${_d}/*")
  if(NOT _left)
    file(REMOVE_RECURSE "${_d}")
  endif()
endforeach()
