"""Synchronous storage: directories, the journal, text segments, codecs and the manifest.

Never imports trio: the engine calls into it from worker threads or inline.
"""
