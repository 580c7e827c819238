"""The results store: optimize runs keyed by a hash of kernel source, spec, flags and device,
kept in SQLite so they survive restarts of the language server."""

from cudalens.store.keys import (device_id, kernel_context, material_key, normalize_space,
                                 result_key, sha256_text, source_materials)
from cudalens.store.records import (CandidateRecord, LaunchRecord, RunRecord, candidate_id,
                                    from_dict, to_dict)
from cudalens.store.sqlite import ResultsStore, StoreError

__all__ = [
    "CandidateRecord", "LaunchRecord", "ResultsStore", "RunRecord", "StoreError",
    "candidate_id", "device_id", "from_dict", "kernel_context", "material_key", "result_key",
    "normalize_space", "sha256_text", "source_materials", "to_dict",
]
