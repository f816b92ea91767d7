"""The config keys of PointRend and Implicit PointRend, added to a detkit config."""
from ...config import CfgNode as CN


def add_pointrend_config(cfg):
    """Adds PointRend's keys (INPUT.CROP.SINGLE_CATEGORY_MAX_AREA, INPUT.COLOR_AUG_SSD, the coarse
    mask head's ROI_MASK_HEAD keys, MODEL.POINT_HEAD, MODEL.IMPLICIT_POINTREND) with their
    defaults to an unfrozen `cfg`."""
    # semantic segmentation: crops retried while one category covers more than this share
    cfg.INPUT.CROP.SINGLE_CATEGORY_MAX_AREA = 1.0
    cfg.INPUT.COLOR_AUG_SSD = False

    # the coarse mask head: an MLP on features pooled from these maps
    mask = cfg.MODEL.ROI_MASK_HEAD
    mask.IN_FEATURES = ("p2",)
    mask.FC_DIM = 1024
    mask.NUM_FC = 2
    mask.OUTPUT_SIDE_RESOLUTION = 7
    mask.POINT_HEAD_ON = False

    cfg.MODEL.POINT_HEAD = CN()
    point = cfg.MODEL.POINT_HEAD
    point.NAME = "StandardPointHead"
    point.NUM_CLASSES = 80
    point.IN_FEATURES = ("p2",)
    point.TRAIN_NUM_POINTS = 14 * 14
    point.OVERSAMPLE_RATIO = 3  # k of the paper
    point.IMPORTANCE_SAMPLE_RATIO = 0.75  # beta of the paper
    point.SUBDIVISION_STEPS = 5
    point.SUBDIVISION_NUM_POINTS = 28 * 28
    point.FC_DIM = 256
    point.NUM_FC = 3
    point.CLS_AGNOSTIC_MASK = False
    point.COARSE_PRED_EACH_LAYER = True
    point.COARSE_SEM_SEG_HEAD_NAME = "SemSegFPNHead"

    cfg.MODEL.IMPLICIT_POINTREND = CN()
    implicit = cfg.MODEL.IMPLICIT_POINTREND
    implicit.IMAGE_FEATURE_ENABLED = True
    implicit.POS_ENC_ENABLED = True
    implicit.PARAMS_L2_REGULARIZER = 0.00001
