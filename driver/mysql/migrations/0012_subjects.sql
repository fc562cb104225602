-- Free subjects (issue #27): registry subjects named as Kafka clients name
-- them ("orders-value", "shop.orders.OrderPlaced"), bound to no stream. A
-- subject has its own level and mode (empty: unset), also before its first
-- version; each version points at a global schema id (schema_id keeps the
-- document, its type and fingerprint). deleted marks a soft deletion.
-- IF NOT EXISTS: a migration that died half-way runs again.
CREATE TABLE IF NOT EXISTS registry_subject (
    name       VARCHAR(255) NOT NULL,
    level      VARCHAR(32)  NOT NULL DEFAULT '',
    mode       VARCHAR(32)  NOT NULL DEFAULT '',
    created_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS subject_version (
    subject    VARCHAR(255) NOT NULL,
    version    INT          NOT NULL,
    schema_id  BIGINT       NOT NULL,
    deleted    TINYINT      NOT NULL DEFAULT 0,
    created_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (subject, version),
    KEY subject_version_schema (schema_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The subject versions a version's document refers to by name.
CREATE TABLE IF NOT EXISTS subject_reference (
    subject     VARCHAR(255) NOT NULL,
    version     INT          NOT NULL,
    position    INT          NOT NULL,
    name        VARCHAR(255) NOT NULL,
    ref_subject VARCHAR(255) NOT NULL,
    ref_version INT          NOT NULL,
    PRIMARY KEY (subject, version, position),
    KEY subject_reference_target (ref_subject, ref_version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
