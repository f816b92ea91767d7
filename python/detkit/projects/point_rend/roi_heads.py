"""PointRendROIHeads: StandardROIHeads that upgrade old PointRend checkpoints and configs."""
import logging

from ...modeling.roi_heads import ROI_HEADS_REGISTRY, StandardROIHeads

_RENAMED_PREFIXES = (("mask_point_head", "mask_head.point_head"),
                     ("mask_coarse_head", "mask_head.coarse_head"))


@ROI_HEADS_REGISTRY.register()
class PointRendROIHeads(StandardROIHeads):
    """StandardROIHeads; weights before version 2 (mask_point_head, mask_coarse_head) are
    renamed on load, and a CoarseMaskHead config runs as PointRendMaskHead."""

    _version = 2

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            logging.getLogger(__name__).warning(
                "PointRend weights are in the old format: converting them (upgrade the model)")
            for key in list(state_dict.keys()):
                for old, new in _RENAMED_PREFIXES:
                    if key.startswith(prefix + old):
                        state_dict[prefix + new + key[len(prefix + old):]] = state_dict.pop(key)
                        break
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def _init_mask_head(cls, cfg, input_shape):
        if cfg.MODEL.MASK_ON and cfg.MODEL.ROI_MASK_HEAD.NAME != "PointRendMaskHead":
            logging.getLogger(__name__).warning(
                "PointRend config is in the old format: converting it (upgrade the config)")
            if cfg.MODEL.ROI_MASK_HEAD.NAME != "CoarseMaskHead":
                raise ValueError("PointRendROIHeads: ROI_MASK_HEAD.NAME must be "
                                 "PointRendMaskHead (or the old CoarseMaskHead), got "
                                 f"'{cfg.MODEL.ROI_MASK_HEAD.NAME}'")
            cfg.defrost()
            cfg.MODEL.ROI_MASK_HEAD.NAME = "PointRendMaskHead"
            cfg.MODEL.ROI_MASK_HEAD.POOLER_TYPE = ""
            cfg.freeze()
        return super()._init_mask_head(cfg, input_shape)
