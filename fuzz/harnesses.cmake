# The fuzz harnesses, for both builds: each one's detkit sources (for the libFuzzer build,
# which compiles them with clang and the sanitizers), libraries, and the shared seed files
# its replay test runs besides fuzz/corpus/<name> and fuzz/regressions/<name>.
set(DETKIT_FUZZ_HARNESSES coco_json results_json yaml_config python_expression rle polygon zip image weights
    voc_xml)
# Harnesses whose sources need libtorch (c10::IValue, tensors): their libFuzzer build links it.
set(DETKIT_FUZZ_TORCH_HARNESSES weights)

set(_utils detkit/utils/error.cpp detkit/utils/strings.cpp detkit/utils/file_io.cpp
           detkit/utils/stop_signal.cpp detkit/utils/progress.cpp detkit/utils/logging.cpp
           detkit/utils/status_line_sink.cpp)
set(DETKIT_FUZZ_SOURCES_coco_json ${_utils} detkit/structures/mask_ops.cpp
    detkit/data/coco/block_reader.cpp detkit/data/coco/coco.cpp
    detkit/data/coco/coco_annotation_parser.cpp detkit/data/coco/coco_builder.cpp
    detkit/data/coco/coco_dataset.cpp detkit/data/coco/coco_element_parser.cpp
    detkit/data/coco/json_stream.cpp detkit/data/coco/lvis.cpp detkit/data/coco/lvis_fields.cpp)
set(DETKIT_FUZZ_SOURCES_results_json ${_utils} detkit/structures/mask_ops.cpp
    detkit/evaluation/coco_results.cpp)
set(DETKIT_FUZZ_SOURCES_yaml_config ${_utils} detkit/config/cfg_node.cpp
    detkit/config/cfg_value.cpp detkit/config/defaults.cpp detkit/config/yaml_io.cpp
    detkit/config/versions.cpp
    detkit/config/python_expression_parser.cpp detkit/config/python_expression.cpp)
set(DETKIT_FUZZ_SOURCES_python_expression ${_utils} detkit/config/cfg_value.cpp
    detkit/config/python_expression_parser.cpp detkit/config/python_expression.cpp)
set(DETKIT_FUZZ_SOURCES_rle ${_utils} detkit/structures/mask_ops.cpp)
set(DETKIT_FUZZ_SOURCES_polygon ${DETKIT_FUZZ_SOURCES_rle})
set(DETKIT_FUZZ_SOURCES_zip ${_utils} detkit/checkpoint/zip_archive.cpp)
set(DETKIT_FUZZ_SOURCES_weights ${_utils}
    detkit/checkpoint/torch_file.cpp detkit/checkpoint/unpickler.cpp detkit/checkpoint/pickler.cpp
    detkit/checkpoint/zip_archive.cpp detkit/checkpoint/zip_writer.cpp
    detkit/checkpoint/numpy_array.cpp)
set(DETKIT_FUZZ_SOURCES_voc_xml ${_utils} detkit/structures/mask_ops.cpp
    detkit/data/coco/coco_dataset.cpp detkit/data/voc/voc_xml.cpp detkit/data/voc/pascal_voc.cpp)
set(DETKIT_FUZZ_SOURCES_image ${_utils} detkit/data/image/image_io.cpp
    detkit/data/image/image_header_size.cpp detkit/data/image/exif_orientation.cpp
    detkit/data/image/jpeg_decode.cpp detkit/data/image/png_codec.cpp
    detkit/data/image/opencv_codecs.cpp)

# Libraries of the ordinary build that hold those sources.
set(DETKIT_FUZZ_LIBS_coco_json detkit_data)
set(DETKIT_FUZZ_LIBS_results_json detkit_evaluation)
set(DETKIT_FUZZ_LIBS_yaml_config detkit_config)
set(DETKIT_FUZZ_LIBS_python_expression detkit_config)
set(DETKIT_FUZZ_LIBS_rle detkit_structures)
set(DETKIT_FUZZ_LIBS_polygon detkit_structures)
set(DETKIT_FUZZ_LIBS_zip detkit_checkpoint)
set(DETKIT_FUZZ_LIBS_image detkit_data)
set(DETKIT_FUZZ_LIBS_voc_xml detkit_data)
set(DETKIT_FUZZ_LIBS_weights detkit_checkpoint)

# Seeds from ../shared (skipped with a message when absent).
set(DETKIT_FUZZ_SEEDS_coco_json
    ${DETKIT_SHARED_DIR}/data/coco_tiny/annotations
    ${DETKIT_SHARED_DIR}/fixtures/cocoeval_keypoints/person_keypoints_val2017_synth.json
    ${DETKIT_SHARED_DIR}/fixtures/lvis_eval/lvis_v1_val_tiny.json)
set(DETKIT_FUZZ_SEEDS_python_expression)  # corpus only
set(DETKIT_FUZZ_SEEDS_results_json)  # shared results files need a leading type byte: corpus only
set(DETKIT_FUZZ_SEEDS_yaml_config ${PROJECT_SOURCE_DIR}/configs)
set(DETKIT_FUZZ_SEEDS_zip ${DETKIT_SHARED_DIR}/fixtures/detectron2)
set(DETKIT_FUZZ_SEEDS_weights ${DETKIT_SHARED_DIR}/fixtures/detectron2
    ${DETKIT_SHARED_DIR}/fixtures/detectron2_retinanet)
set(DETKIT_FUZZ_SEEDS_image ${DETKIT_SHARED_DIR}/data/coco_tiny/val2017)
set(DETKIT_FUZZ_SEEDS_voc_xml ${DETKIT_SHARED_DIR}/fixtures/voc_eval/VOC2007/Annotations)
