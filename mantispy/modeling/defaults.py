"""Defaults of the model selection that the command line shows, kept apart from the numeric modules so that
reading them imports nothing heavy."""

VIEW_CONFIDENCE = 0.0
"""The view-confidence rule's default (:func:`mantispy.modeling.selection.confident_view`): a view richer than
the input descriptors keeps the choice only where it beats the simpler views in this share of paired resamples
of the training inputs (0: off, the smallest cross-validated error alone decides)."""
