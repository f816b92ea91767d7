# `pip install --no-build-isolation .` (pyproject.toml, scikit-build-core): the wheel holds one
# folder, site-packages/detkit: the Python modules and detkit._C, the configs
# (model_zoo/configs), the libraries in detkit/lib, the `detkit` program in detkit/bin (the
# console script `detkit` runs it), headers and the CMake package under detkit/. Every binary finds
# the others, and torch's libraries in the same site-packages, relative to itself: the
# environment can move. Built against the installing Python's torch (hence no build isolation).
if(NOT DETKIT_PYTHON)
  set(DETKIT_PYTHON ${Python_EXECUTABLE} CACHE FILEPATH "" FORCE)  # the installing interpreter
endif()
set(CMAKE_INSTALL_LIBDIR detkit/lib)
set(CMAKE_INSTALL_BINDIR detkit/bin)
set(CMAKE_INSTALL_INCLUDEDIR detkit/include)
set(DETKIT_PYTHON_DESTINATION detkit)
# bin/ and lib/ see lib/, ../../torch/lib and torch's CUDA runtime (../../nvidia/cu13/lib); _C.so (detkit/) sets its own (python/CMakeLists.txt).
set(CMAKE_INSTALL_RPATH "$ORIGIN/../lib;$ORIGIN/../../nvidia/cu13/lib;$ORIGIN/../../torch/lib")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH OFF)
