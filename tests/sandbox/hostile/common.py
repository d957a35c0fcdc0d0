"""The reference steps, shared by the hostile processors that do correct work."""

from acksim.model.processor import process as reference
