"""One renderer per wire protocol: transcripts → provider bytes (see ``transcript.py``)."""
