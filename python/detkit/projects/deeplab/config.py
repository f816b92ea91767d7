"""add_deeplab_config: the config keys of Detectron2's DeepLab project (poly LR schedule, hard
pixel mining, ASPP and decoder of the heads, the DeepLab ResNet) with their defaults."""

__all__ = ["add_deeplab_config"]


def _define_near_miss(cfg, key, default):
    """Adds a key one edit from one of Detectron2's own (RES4_DILATION beside RES5_DILATION),
    which detkit's CfgNode refuses as a typo when set as an attribute: declared on the config
    tree directly (a frozen config still refuses it); set to default when already there."""
    tree = cfg._tree
    if tree.kind(key) is None:
        tree.define(key, default)
    else:
        tree.set(key, default)


def add_deeplab_config(cfg):
    """Adds DeepLab's keys to cfg (an unfrozen detkit CfgNode) at their defaults."""
    # random crops are retried while one category covers more than this fraction of the crop
    cfg.INPUT.CROP.SINGLE_CATEGORY_MAX_AREA = 1.0
    # WarmupPolyLR: (1 - iter / max_iter) ** POWER, held at CONSTANT_ENDING once below it
    cfg.SOLVER.POLY_LR_POWER = 0.9
    cfg.SOLVER.POLY_LR_CONSTANT_ENDING = 0.0
    head = cfg.MODEL.SEM_SEG_HEAD
    head.LOSS_TYPE = "hard_pixel_mining"  # or "cross_entropy"
    head.PROJECT_FEATURES = ["res2"]
    head.PROJECT_CHANNELS = [48]
    head.ASPP_CHANNELS = 256
    head.ASPP_DILATIONS = [6, 12, 18]
    head.ASPP_DROPOUT = 0.1
    head.USE_DEPTHWISE_SEPARABLE_CONV = False
    resnets = cfg.MODEL.RESNETS
    _define_near_miss(cfg, "MODEL.RESNETS.RES4_DILATION", 1)
    resnets.RES5_MULTI_GRID = [1, 2, 4]
    resnets.STEM_TYPE = "deeplab"  # or "basic"
