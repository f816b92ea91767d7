// Anchor TU for the shared precompiled torch header.
