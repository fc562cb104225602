-- Free subjects (issue #27): registry subjects named as Kafka clients name
-- them ("orders-value", "shop.orders.OrderPlaced"), bound to no stream. A
-- subject has its own level and mode (empty: unset), also before its first
-- version; each version points at a global schema id (schema_id keeps the
-- document, its type and fingerprint). deleted marks a soft deletion.
CREATE TABLE registry_subject (
    name       text        NOT NULL PRIMARY KEY,
    level      text        NOT NULL DEFAULT '',
    mode       text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);

CREATE TABLE subject_version (
    subject    text        NOT NULL,
    version    integer     NOT NULL,
    schema_id  bigint      NOT NULL,
    deleted    boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (subject, version)
);
CREATE INDEX subject_version_schema ON subject_version (schema_id);

-- The subject versions a version's document refers to by name.
CREATE TABLE subject_reference (
    subject     text    NOT NULL,
    version     integer NOT NULL,
    position    integer NOT NULL,
    name        text    NOT NULL,
    ref_subject text    NOT NULL,
    ref_version integer NOT NULL,
    PRIMARY KEY (subject, version, position)
);
CREATE INDEX subject_reference_target ON subject_reference (ref_subject, ref_version);
