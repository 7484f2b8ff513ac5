"""The model in: loading a model file, IR preparation (clone + constant folding), placement shapes and the static clone of a dynamic model, carrying a placement back onto the dynamic model."""
