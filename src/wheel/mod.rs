//! The wheel format: names, versions, tags, METADATA/WHEEL/RECORD, a deterministic writer and a verifying reader.
