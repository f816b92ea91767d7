#!/usr/bin/env bash
# check_closure.sh FILE...: the shared libraries each executable or module loads (ldd) leave out
# OpenCV's imgcodecs and what it brings (GDAL, OpenEXR, libtiff, libheif...): detkit decodes and
# encodes JPEG and PNG itself and loads imgcodecs at run time only for other formats. Prints how
# many libraries each loads.
set -euo pipefail
status=0
for f in "$@"; do
  libs=$(ldd "$f" | awk '/=>/ {print $1}')
  echo "$(basename "$f"): $(echo "$libs" | wc -l) shared libraries"
  unwanted=$(echo "$libs" | grep -E '^lib(opencv_imgcodecs|gdal|OpenEXR|tiff|heif|openjp2|webp)' || true)
  if [[ -n $unwanted ]]; then
    echo "$(basename "$f") links what it should load at run time only:" $unwanted >&2
    status=1
  fi
done
exit $status
