"""Cost models of placements: measured (profiler) or simulated, and what predicts from them."""

from .cost_model import CostModel
from .link_calibration import LinkProfile, profile_links
from .profile_store import ProfileStore, structural_hash
from .profiler import DeviceReport, ModelProfile, measure_model_profile, profile_model

__all__ = [
    "CostModel",
    "DeviceReport",
    "LinkProfile",
    "ModelProfile",
    "ProfileStore",
    "measure_model_profile",
    "profile_links",
    "profile_model",
    "structural_hash",
]
