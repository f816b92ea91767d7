# The one torch detkit builds on: PyPI's torch 2.11 in a Python environment (scripts/setup.sh makes
# .venv/ from requirements.txt, or uses an active Python that already has torch 2.11.x). Its
# headers, CMake package and libraries come from the wheel; the same Python is the tests' oracle
# (torchvision) and the interpreter the `detkit` package is built for.
#   DETKIT_PYTHON  the interpreter (default: .venv/bin/python at the repository root, else python3)
set(DETKIT_TORCH_VERSION_REQUIRED 2.11)
set(DETKIT_PYTHON "" CACHE FILEPATH "Python whose torch detkit builds on (torch ${DETKIT_TORCH_VERSION_REQUIRED}.x)")
if(NOT DETKIT_PYTHON)
  if(EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python)
    set(DETKIT_PYTHON ${PROJECT_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH "" FORCE)
  else()
    find_program(_detkit_python3 python3 NO_CACHE)
    set(DETKIT_PYTHON ${_detkit_python3} CACHE FILEPATH "" FORCE)
  endif()
endif()
execute_process(
  COMMAND ${DETKIT_PYTHON} -c "import torch, torch.utils; print(torch.__version__.split('+')[0]); print(torch.utils.cmake_prefix_path)"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "DETKIT_PYTHON '${DETKIT_PYTHON}' cannot import torch (run ./scripts/setup.sh, "
                      "or pass -DDETKIT_PYTHON=<a python with torch ${DETKIT_TORCH_VERSION_REQUIRED}.x>): ${_err}")
endif()
string(REPLACE "\n" ";" _out "${_out}")
list(GET _out 0 DETKIT_TORCH_VERSION)
list(GET _out 1 _torch_prefix)
if(NOT DETKIT_TORCH_VERSION MATCHES "^${DETKIT_TORCH_VERSION_REQUIRED}\\.")
  message(FATAL_ERROR "detkit builds on torch ${DETKIT_TORCH_VERSION_REQUIRED}.x, but DETKIT_PYTHON "
                      "'${DETKIT_PYTHON}' has torch ${DETKIT_TORCH_VERSION}: install torch==2.11.0 "
                      "(requirements.txt) or pass -DDETKIT_PYTHON=<a python with torch ${DETKIT_TORCH_VERSION_REQUIRED}.x>")
endif()
set(DETKIT_TORCH_CMAKE_PREFIX ${_torch_prefix})  # recorded in the installed detkitConfig.cmake
list(PREPEND CMAKE_PREFIX_PATH ${_torch_prefix})
# The wheel's build is CUDA's: its CMake package looks for the CUDA toolkit (nvcc) even when
# only CPU code is built against it, and compiles CUDA for TORCH_CUDA_ARCH_LIST (on a machine
# without a GPU its default is every architecture the toolkit knows, each compile several times
# slower): detkit's kernels are built for the data-centre GPUs its benchmark runs on, A100 (8.0)
# and H100 / H200 (9.0, with PTX for later ones to compile at load).
set(DETKIT_CUDA_ARCH_LIST "8.0;9.0+PTX" CACHE STRING "GPU architectures detkit's CUDA kernels are compiled for (TORCH_CUDA_ARCH_LIST)")
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST ${DETKIT_CUDA_ARCH_LIST})
endif()
set(Python3_EXECUTABLE ${DETKIT_PYTHON})  # the Python package and its tests: the same interpreter
find_package(Torch REQUIRED)
if(NOT Torch_VERSION VERSION_EQUAL DETKIT_TORCH_VERSION AND Torch_VERSION)
  message(FATAL_ERROR "torch's CMake package at ${_torch_prefix} is version ${Torch_VERSION}, its "
                      "Python module ${DETKIT_TORCH_VERSION}")
endif()
get_filename_component(DETKIT_TORCH_LIBRARY_DIR "${TORCH_LIBRARY}" DIRECTORY)
# The CUDA runtime torch loads (the wheel's nvidia-cuda-runtime package beside torch/): detkit's
# CUDA kernels need libcudart by its soname, and must find torch's copy, not the toolkit's.
get_filename_component(DETKIT_TORCH_CUDA_RUNTIME_DIR "${DETKIT_TORCH_LIBRARY_DIR}/../../nvidia/cu13/lib" ABSOLUTE)
message(STATUS "detkit builds on torch ${DETKIT_TORCH_VERSION} of ${DETKIT_PYTHON} (${DETKIT_TORCH_LIBRARY_DIR})")
