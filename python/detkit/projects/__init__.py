"""Detectron2's projects (detectron2.projects) on detkit: point_rend, deeplab."""
