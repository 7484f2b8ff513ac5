"""The cache: placements keyed by model structure + devices + properties + options, the one cache root (placements, profiles, blobs, workers), the stored device-support matrix."""
