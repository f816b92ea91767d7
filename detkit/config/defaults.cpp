// Every key of Detectron2's defaults, so that any Detectron2 config or cfg.dump() loads
// unchanged, including keys of models detkit does not build (RetinaNet, keypoints, panoptic).
#include "detkit/config/defaults.h"

#include <atomic>

namespace detkit::config {

namespace {

using V = CfgValue;
using K = CfgValue::Kind;

V ints(std::initializer_list<int64_t> xs) {
  std::vector<V> out;
  for (auto x : xs) out.emplace_back(x);
  return V::list(out);
}
V floats(std::initializer_list<double> xs) {
  std::vector<V> out;
  for (auto x : xs) out.emplace_back(x);
  return V::list(out);
}
V strings(std::initializer_list<const char*> xs) {
  std::vector<V> out;
  for (auto x : xs) out.emplace_back(x);
  return V::list(out);
}
V list(std::initializer_list<V> xs) { return V::list(std::vector<V>(xs)); }
V empty_list() { return V::list({}); }

std::atomic<DefaultDeviceProbe> default_device_probe{nullptr};

void define_model(CfgNode& c) {
  c.define("MODEL.LOAD_PROPOSALS", false);
  c.define("MODEL.MASK_ON", false);
  c.define("MODEL.KEYPOINT_ON", false);
  // Detectron2's default is "cuda": here "cuda" where a GPU is visible and detkit has its CUDA
  // kernels, else "cpu" (the probe's answer; build_model logs which).
  const DefaultDeviceProbe probe = default_device_probe.load();
  c.define("MODEL.DEVICE", probe ? probe() : std::string("cpu"));
  c.define("MODEL.META_ARCHITECTURE", "GeneralizedRCNN");
  c.define("MODEL.WEIGHTS", "");
  c.define("MODEL.PIXEL_MEAN", floats({103.530, 116.280, 123.675}));
  c.define("MODEL.PIXEL_STD", floats({1.0, 1.0, 1.0}));

  c.define("MODEL.BACKBONE.NAME", "build_resnet_backbone");
  c.define("MODEL.BACKBONE.FREEZE_AT", 2);

  c.define("MODEL.FPN.IN_FEATURES", empty_list());
  c.define("MODEL.FPN.OUT_CHANNELS", 256);
  c.define("MODEL.FPN.NORM", "");
  c.define("MODEL.FPN.FUSE_TYPE", "sum");

  c.define("MODEL.PROPOSAL_GENERATOR.NAME", "RPN");
  c.define("MODEL.PROPOSAL_GENERATOR.MIN_SIZE", 0);

  c.define("MODEL.ANCHOR_GENERATOR.NAME", "DefaultAnchorGenerator");
  // Floats: RetinaNet's sizes are x * 2^(k/3) (Detectron2 keeps whatever the YAML holds).
  c.define("MODEL.ANCHOR_GENERATOR.SIZES", list({floats({32, 64, 128, 256, 512})}));
  c.define("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS", list({floats({0.5, 1.0, 2.0})}));
  c.define("MODEL.ANCHOR_GENERATOR.ANGLES", list({ints({-90, 0, 90})}));
  c.define("MODEL.ANCHOR_GENERATOR.OFFSET", 0.0);

  c.define("MODEL.RPN.HEAD_NAME", "StandardRPNHead");
  c.define("MODEL.RPN.IN_FEATURES", strings({"res4"}));
  c.define("MODEL.RPN.BOUNDARY_THRESH", -1);
  c.define("MODEL.RPN.IOU_THRESHOLDS", floats({0.3, 0.7}));
  c.define("MODEL.RPN.IOU_LABELS", ints({0, -1, 1}));
  c.define("MODEL.RPN.BATCH_SIZE_PER_IMAGE", 256);
  c.define("MODEL.RPN.POSITIVE_FRACTION", 0.5);
  c.define("MODEL.RPN.BBOX_REG_LOSS_TYPE", "smooth_l1");
  c.define("MODEL.RPN.BBOX_REG_LOSS_WEIGHT", 1.0);
  c.define("MODEL.RPN.BBOX_REG_WEIGHTS", floats({1.0, 1.0, 1.0, 1.0}));
  c.define("MODEL.RPN.SMOOTH_L1_BETA", 0.0);
  c.define("MODEL.RPN.LOSS_WEIGHT", 1.0);
  c.define("MODEL.RPN.PRE_NMS_TOPK_TRAIN", 12000);
  c.define("MODEL.RPN.PRE_NMS_TOPK_TEST", 6000);
  c.define("MODEL.RPN.POST_NMS_TOPK_TRAIN", 2000);
  c.define("MODEL.RPN.POST_NMS_TOPK_TEST", 1000);
  c.define("MODEL.RPN.NMS_THRESH", 0.7);
  c.define("MODEL.RPN.CONV_DIMS", ints({-1}));

  c.define("MODEL.ROI_HEADS.NAME", "Res5ROIHeads");
  c.define("MODEL.ROI_HEADS.NUM_CLASSES", 80);
  c.define("MODEL.ROI_HEADS.IN_FEATURES", strings({"res4"}));
  c.define("MODEL.ROI_HEADS.IOU_THRESHOLDS", floats({0.5}));
  c.define("MODEL.ROI_HEADS.IOU_LABELS", ints({0, 1}));
  c.define("MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE", 512);
  c.define("MODEL.ROI_HEADS.POSITIVE_FRACTION", 0.25);
  c.define("MODEL.ROI_HEADS.SCORE_THRESH_TEST", 0.05);
  c.define("MODEL.ROI_HEADS.NMS_THRESH_TEST", 0.5);
  c.define("MODEL.ROI_HEADS.PROPOSAL_APPEND_GT", true);

  c.define("MODEL.ROI_BOX_HEAD.NAME", "");
  c.define("MODEL.ROI_BOX_HEAD.BBOX_REG_LOSS_TYPE", "smooth_l1");
  c.define("MODEL.ROI_BOX_HEAD.BBOX_REG_LOSS_WEIGHT", 1.0);
  c.define("MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS", floats({10.0, 10.0, 5.0, 5.0}));
  c.define("MODEL.ROI_BOX_HEAD.SMOOTH_L1_BETA", 0.0);
  c.define("MODEL.ROI_BOX_HEAD.POOLER_RESOLUTION", 14);
  c.define("MODEL.ROI_BOX_HEAD.POOLER_SAMPLING_RATIO", 0);
  c.define("MODEL.ROI_BOX_HEAD.POOLER_TYPE", "ROIAlignV2");
  c.define("MODEL.ROI_BOX_HEAD.NUM_FC", 0);
  c.define("MODEL.ROI_BOX_HEAD.FC_DIM", 1024);
  c.define("MODEL.ROI_BOX_HEAD.NUM_CONV", 0);
  c.define("MODEL.ROI_BOX_HEAD.CONV_DIM", 256);
  c.define("MODEL.ROI_BOX_HEAD.NORM", "");
  c.define("MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG", false);
  c.define("MODEL.ROI_BOX_HEAD.TRAIN_ON_PRED_BOXES", false);
  c.define("MODEL.ROI_BOX_HEAD.USE_FED_LOSS", false);
  c.define("MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE", false);
  c.define("MODEL.ROI_BOX_HEAD.FED_LOSS_FREQ_WEIGHT_POWER", 0.5);
  c.define("MODEL.ROI_BOX_HEAD.FED_LOSS_NUM_CLASSES", 50);

  c.define("MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS",
           list({floats({10.0, 10.0, 5.0, 5.0}), floats({20.0, 20.0, 10.0, 10.0}),
                 floats({30.0, 30.0, 15.0, 15.0})}));
  c.define("MODEL.ROI_BOX_CASCADE_HEAD.IOUS", floats({0.5, 0.6, 0.7}));

  c.define("MODEL.ROI_MASK_HEAD.NAME", "MaskRCNNConvUpsampleHead");
  c.define("MODEL.ROI_MASK_HEAD.POOLER_RESOLUTION", 14);
  c.define("MODEL.ROI_MASK_HEAD.POOLER_SAMPLING_RATIO", 0);
  c.define("MODEL.ROI_MASK_HEAD.NUM_CONV", 0);
  c.define("MODEL.ROI_MASK_HEAD.CONV_DIM", 256);
  c.define("MODEL.ROI_MASK_HEAD.NORM", "");
  c.define("MODEL.ROI_MASK_HEAD.CLS_AGNOSTIC_MASK", false);
  c.define("MODEL.ROI_MASK_HEAD.POOLER_TYPE", "ROIAlignV2");

  c.define("MODEL.ROI_KEYPOINT_HEAD.NAME", "KRCNNConvDeconvUpsampleHead");
  c.define("MODEL.ROI_KEYPOINT_HEAD.POOLER_RESOLUTION", 14);
  c.define("MODEL.ROI_KEYPOINT_HEAD.POOLER_SAMPLING_RATIO", 0);
  c.define("MODEL.ROI_KEYPOINT_HEAD.CONV_DIMS", ints({512, 512, 512, 512, 512, 512, 512, 512}));
  c.define("MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS", 17);
  c.define("MODEL.ROI_KEYPOINT_HEAD.MIN_KEYPOINTS_PER_IMAGE", 1);
  c.define("MODEL.ROI_KEYPOINT_HEAD.NORMALIZE_LOSS_BY_VISIBLE_KEYPOINTS", true);
  c.define("MODEL.ROI_KEYPOINT_HEAD.LOSS_WEIGHT", 1.0);
  c.define("MODEL.ROI_KEYPOINT_HEAD.POOLER_TYPE", "ROIAlignV2");

  c.define("MODEL.SEM_SEG_HEAD.NAME", "SemSegFPNHead");
  c.define("MODEL.SEM_SEG_HEAD.IN_FEATURES", strings({"p2", "p3", "p4", "p5"}));
  c.define("MODEL.SEM_SEG_HEAD.IGNORE_VALUE", 255);
  c.define("MODEL.SEM_SEG_HEAD.NUM_CLASSES", 54);
  c.define("MODEL.SEM_SEG_HEAD.CONVS_DIM", 128);
  c.define("MODEL.SEM_SEG_HEAD.COMMON_STRIDE", 4);
  c.define("MODEL.SEM_SEG_HEAD.NORM", "GN");
  c.define("MODEL.SEM_SEG_HEAD.LOSS_WEIGHT", 1.0);

  c.define("MODEL.PANOPTIC_FPN.INSTANCE_LOSS_WEIGHT", 1.0);
  c.define("MODEL.PANOPTIC_FPN.COMBINE.ENABLED", true);
  c.define("MODEL.PANOPTIC_FPN.COMBINE.OVERLAP_THRESH", 0.5);
  c.define("MODEL.PANOPTIC_FPN.COMBINE.STUFF_AREA_LIMIT", 4096);
  c.define("MODEL.PANOPTIC_FPN.COMBINE.INSTANCES_CONFIDENCE_THRESH", 0.5);

  c.define("MODEL.RETINANET.NUM_CLASSES", 80);
  c.define("MODEL.RETINANET.IN_FEATURES", strings({"p3", "p4", "p5", "p6", "p7"}));
  c.define("MODEL.RETINANET.NUM_CONVS", 4);
  c.define("MODEL.RETINANET.IOU_THRESHOLDS", floats({0.4, 0.5}));
  c.define("MODEL.RETINANET.IOU_LABELS", ints({0, -1, 1}));
  c.define("MODEL.RETINANET.PRIOR_PROB", 0.01);
  c.define("MODEL.RETINANET.SCORE_THRESH_TEST", 0.05);
  c.define("MODEL.RETINANET.TOPK_CANDIDATES_TEST", 1000);
  c.define("MODEL.RETINANET.NMS_THRESH_TEST", 0.5);
  c.define("MODEL.RETINANET.BBOX_REG_WEIGHTS", floats({1.0, 1.0, 1.0, 1.0}));
  c.define("MODEL.RETINANET.FOCAL_LOSS_GAMMA", 2.0);
  c.define("MODEL.RETINANET.FOCAL_LOSS_ALPHA", 0.25);
  c.define("MODEL.RETINANET.SMOOTH_L1_LOSS_BETA", 0.1);
  c.define("MODEL.RETINANET.BBOX_REG_LOSS_TYPE", "smooth_l1");
  c.define("MODEL.RETINANET.NORM", "");

  c.define("MODEL.RESNETS.DEPTH", 50);
  c.define("MODEL.RESNETS.OUT_FEATURES", strings({"res4"}));
  c.define("MODEL.RESNETS.NUM_GROUPS", 1);
  c.define("MODEL.RESNETS.NORM", "FrozenBN");
  c.define("MODEL.RESNETS.WIDTH_PER_GROUP", 64);
  c.define("MODEL.RESNETS.STRIDE_IN_1X1", true);
  c.define("MODEL.RESNETS.RES5_DILATION", 1);
  c.define("MODEL.RESNETS.RES2_OUT_CHANNELS", 256);
  c.define("MODEL.RESNETS.STEM_OUT_CHANNELS", 64);
  c.define("MODEL.RESNETS.DEFORM_ON_PER_STAGE", V::list({V(false), V(false), V(false), V(false)}));
  c.define("MODEL.RESNETS.DEFORM_MODULATED", false);
  c.define("MODEL.RESNETS.DEFORM_NUM_GROUPS", 1);
}

void define_input_and_data(CfgNode& c) {
  c.define("INPUT.MIN_SIZE_TRAIN", ints({800}));
  c.define("INPUT.MIN_SIZE_TRAIN_SAMPLING", "choice");
  c.define("INPUT.MAX_SIZE_TRAIN", 1333);
  c.define("INPUT.MIN_SIZE_TEST", 800);
  c.define("INPUT.MAX_SIZE_TEST", 1333);
  c.define("INPUT.RANDOM_FLIP", "horizontal");
  c.define("INPUT.CROP.ENABLED", false);
  c.define("INPUT.CROP.TYPE", "relative_range");
  c.define("INPUT.CROP.SIZE", floats({0.9, 0.9}));
  c.define("INPUT.FORMAT", "BGR");
  c.define("INPUT.MASK_FORMAT", "polygon");

  c.define("DATASETS.TRAIN", empty_list());
  c.define("DATASETS.PROPOSAL_FILES_TRAIN", empty_list());
  c.define("DATASETS.PRECOMPUTED_PROPOSAL_TOPK_TRAIN", 2000);
  c.define("DATASETS.TEST", empty_list());
  c.define("DATASETS.PROPOSAL_FILES_TEST", empty_list());
  c.define("DATASETS.PRECOMPUTED_PROPOSAL_TOPK_TEST", 1000);

  c.define("DATALOADER.NUM_WORKERS", 4);
  c.define("DATALOADER.ASPECT_RATIO_GROUPING", true);
  c.define("DATALOADER.SAMPLER_TRAIN", "TrainingSampler");
  c.define("DATALOADER.REPEAT_THRESHOLD", 0.0);
  c.define("DATALOADER.REPEAT_SQRT", true);
  c.define("DATALOADER.FILTER_EMPTY_ANNOTATIONS", true);
  // detkit's: a training image that is missing, truncated, corrupt or wrongly sized. "skip"
  // warns once per file, lists it in OUTPUT_DIR/bad_images.txt and uses another image; "error"
  // stops naming it (Detectron2's behaviour). More than MAX_BAD_IMAGE_FRACTION of the images read
  // being bad (judged from 200 read on) stops training.
  c.define("DATALOADER.ON_BAD_IMAGE", "skip");
  c.define("DATALOADER.MAX_BAD_IMAGE_FRACTION", 0.05);
  // detkit's: True makes a run the same at any world size: every rank plans the whole sample
  // stream into global batches of SOLVER.IMS_PER_BATCH images (aspect-ratio grouping included)
  // and takes its slice, pads its images to the global batch's size, and the model's random draws
  // for an image are seeded by its position in the stream. False: Detectron2's (each rank groups
  // its own shard of the stream into batches of its own).
  c.define("DATALOADER.WORLD_SIZE_INVARIANT", true);
}

void define_solver_and_test(CfgNode& c) {
  c.define("SOLVER.LR_SCHEDULER_NAME", "WarmupMultiStepLR");
  c.define("SOLVER.MAX_ITER", 40000);
  c.define("SOLVER.BASE_LR", 0.001);
  c.define("SOLVER.BASE_LR_END", 0.0);
  c.define("SOLVER.MOMENTUM", 0.9);
  c.define("SOLVER.NESTEROV", false);
  c.define("SOLVER.WEIGHT_DECAY", 0.0001);
  c.define("SOLVER.WEIGHT_DECAY_NORM", 0.0);
  c.define("SOLVER.GAMMA", 0.1);
  c.define("SOLVER.STEPS", ints({30000}));
  c.define("SOLVER.NUM_DECAYS", 3);
  c.define("SOLVER.WARMUP_FACTOR", 1.0 / 1000);
  c.define("SOLVER.WARMUP_ITERS", 1000);
  c.define("SOLVER.WARMUP_METHOD", "linear");
  c.define("SOLVER.RESCALE_INTERVAL", false);
  c.define("SOLVER.CHECKPOINT_PERIOD", 5000);
  c.define("SOLVER.IMS_PER_BATCH", 16);
  c.define("SOLVER.REFERENCE_WORLD_SIZE", 0);
  c.define("SOLVER.BIAS_LR_FACTOR", 1.0);
  c.define("SOLVER.WEIGHT_DECAY_BIAS", V(), K::Float);  // None: same as WEIGHT_DECAY
  c.define("SOLVER.CLIP_GRADIENTS.ENABLED", false);
  c.define("SOLVER.CLIP_GRADIENTS.CLIP_TYPE", "value");
  c.define("SOLVER.CLIP_GRADIENTS.CLIP_VALUE", 1.0);
  c.define("SOLVER.CLIP_GRADIENTS.NORM_TYPE", 2.0);
  c.define("SOLVER.AMP.ENABLED", false);
  // detkit's own (detkit_only_keys): what SOLVER.AMP.ENABLED turns on (solver/amp.h).
  c.define("SOLVER.AMP.PRECISION", "bfloat16");  // bfloat16 | float16 (where the device has it)
  c.define("SOLVER.AMP.OPT_LEVEL", "O1");  // O1: fp32 weights (Detectron2's); O2: fp32 masters
  c.define("SOLVER.AMP.LOSS_SCALE", "dynamic");  // dynamic (GradScaler) | a number (static)

  c.define("TEST.EXPECTED_RESULTS", empty_list());
  c.define("TEST.EVAL_PERIOD", 0);
  c.define("TEST.VAL_LOSS_PERIOD", 0);  // detkit's own: training losses on DATASETS.TEST, 0 = off
  c.define("TEST.KEYPOINT_OKS_SIGMAS", empty_list());
  c.define("TEST.DETECTIONS_PER_IMAGE", 100);
  c.define("TEST.AUG.ENABLED", false);
  c.define("TEST.AUG.MIN_SIZES", ints({400, 500, 600, 700, 800, 900, 1000, 1100, 1200}));
  c.define("TEST.AUG.MAX_SIZE", 4000);
  c.define("TEST.AUG.FLIP", true);
  c.define("TEST.PRECISE_BN.ENABLED", false);
  c.define("TEST.PRECISE_BN.NUM_ITER", 200);
}

void define_misc(CfgNode& c) {
  c.define("OUTPUT_DIR", "./output");
  c.define("SEED", -1);
  c.define("CUDNN_BENCHMARK", false);
  // detkit's own: auto (transposed convolutions whose stride is their kernel, the mask head's
  // upsampling, as matrix products; libtorch's kernels otherwise) | direct (libtorch's always)
  c.define("CONV_ALGORITHM", "auto");
  c.define("FLOAT32_PRECISION", "");
  // detkit's own: flush subnormal floats to zero (x86 FTZ/DAZ); on by default, as TensorFlow's CPU
  // kernels run: Detectron2's recipes underflow there and Intel CPUs compute subnormals slowly
  c.define("FLUSH_DENORMAL", true);
  c.define("VIS_PERIOD", 0);
  c.define("GLOBAL.HACK", 1.0);
  c.define("VERSION", 2);
}

CfgNode make_defaults() {
  CfgNode c;
  define_model(c);
  define_input_and_data(c);
  define_solver_and_test(c);
  define_misc(c);
  return c;
}

}  // namespace

void set_default_device_probe(DefaultDeviceProbe probe) { default_device_probe.store(probe); }

CfgNode get_cfg() {
  static const CfgNode defaults = make_defaults();
  return defaults;
}

const std::vector<std::string>& detkit_only_keys() {
  static const std::vector<std::string> keys = {
      "CONV_ALGORITHM", "DATALOADER.MAX_BAD_IMAGE_FRACTION", "DATALOADER.ON_BAD_IMAGE",
      "DATALOADER.WORLD_SIZE_INVARIANT", "FLUSH_DENORMAL", "SOLVER.AMP.LOSS_SCALE",
      "SOLVER.AMP.OPT_LEVEL", "SOLVER.AMP.PRECISION", "TEST.VAL_LOSS_PERIOD"};
  return keys;
}

}  // namespace detkit::config
