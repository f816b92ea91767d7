#pragma once
// Reading COCO panoptic PNGs (pan_seg_file_name) as panopticapi's rgb2id does: each pixel's
// segment id is R + 256 G + 256^2 B, 0 for void.
#include <opencv2/core.hpp>
#include <string>

namespace detkit::data {

/// The segment ids of the panoptic PNG at `path` as an (H, W) int32 matrix. RGB and RGBA files
/// are read (alpha ignored, as rgb2id reads only the first three channels); whatever cannot be
/// read (image_io.h's checks), a grey or palette-less one-channel file (rgb2id needs three
/// channels) and files of 16 bits per channel are a detkit::Error naming the file.
cv::Mat read_panoptic_ids(const std::string& path);

}  // namespace detkit::data
