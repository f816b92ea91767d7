"""detkit.projects: Detectron2's projects (point_rend, deeplab) as Python packages of detkit."""
