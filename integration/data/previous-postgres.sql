--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: census; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA census;


--
-- Name: hightouch_audit; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA hightouch_audit;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: destination_objects; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.destination_objects (
    id bigint,
    type text,
    name text
);


--
-- Name: destinations; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.destinations (
    id bigint,
    type text,
    name text
);


--
-- Name: source_objects; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.source_objects (
    id bigint,
    type text,
    name text,
    model_id bigint,
    business_object_id bigint,
    filter_segment_id bigint,
    cohort_id bigint
);


--
-- Name: sync_log_records; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.sync_log_records (
    log_id text,
    sync_id bigint,
    sync_run_id bigint,
    record_identifier text,
    record_payload jsonb,
    batch_started_at timestamp with time zone,
    batch_completed_at timestamp with time zone,
    operation text,
    status text,
    status_message text,
    _census_logged_at timestamp with time zone,
    destination_id bigint,
    destination_object_id bigint,
    source_id bigint,
    source_object_id bigint,
    batch_number integer,
    invalid_reason text,
    error_code text
)
PARTITION BY RANGE (batch_started_at);


--
-- Name: sync_log; Type: VIEW; Schema: census; Owner: -
--

CREATE VIEW census.sync_log AS
 SELECT sync_log_records.log_id,
    sync_log_records.sync_id,
    sync_log_records.sync_run_id,
    sync_log_records.record_identifier,
    sync_log_records.record_payload,
    sync_log_records.batch_started_at,
    sync_log_records.batch_completed_at,
    sync_log_records.operation,
    sync_log_records.status,
    sync_log_records.status_message,
    sync_log_records._census_logged_at,
    sync_log_records.destination_id,
    sync_log_records.destination_object_id,
    sync_log_records.source_id,
    sync_log_records.source_object_id,
    sync_log_records.batch_number,
    sync_log_records.invalid_reason,
    sync_log_records.error_code
   FROM census.sync_log_records;


--
-- Name: sync_log_records_p20261120; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.sync_log_records_p20261120 (
    log_id text,
    sync_id bigint,
    sync_run_id bigint,
    record_identifier text,
    record_payload jsonb,
    batch_started_at timestamp with time zone,
    batch_completed_at timestamp with time zone,
    operation text,
    status text,
    status_message text,
    _census_logged_at timestamp with time zone,
    destination_id bigint,
    destination_object_id bigint,
    source_id bigint,
    source_object_id bigint,
    batch_number integer,
    invalid_reason text,
    error_code text
);


--
-- Name: sync_log_records_p20261121; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.sync_log_records_p20261121 (
    log_id text,
    sync_id bigint,
    sync_run_id bigint,
    record_identifier text,
    record_payload jsonb,
    batch_started_at timestamp with time zone,
    batch_completed_at timestamp with time zone,
    operation text,
    status text,
    status_message text,
    _census_logged_at timestamp with time zone,
    destination_id bigint,
    destination_object_id bigint,
    source_id bigint,
    source_object_id bigint,
    batch_number integer,
    invalid_reason text,
    error_code text
);


--
-- Name: sync_log_records_p20261122; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.sync_log_records_p20261122 (
    log_id text,
    sync_id bigint,
    sync_run_id bigint,
    record_identifier text,
    record_payload jsonb,
    batch_started_at timestamp with time zone,
    batch_completed_at timestamp with time zone,
    operation text,
    status text,
    status_message text,
    _census_logged_at timestamp with time zone,
    destination_id bigint,
    destination_object_id bigint,
    source_id bigint,
    source_object_id bigint,
    batch_number integer,
    invalid_reason text,
    error_code text
);


--
-- Name: synclog_versions; Type: TABLE; Schema: census; Owner: -
--

CREATE TABLE census.synclog_versions (
    table_name text,
    version integer,
    added_columns text,
    applied_at timestamp with time zone
);


--
-- Name: sync_changelog; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.sync_changelog (
    sync_id bigint,
    sync_run_id bigint,
    op_type text,
    row_id text,
    status text,
    failure_reason text,
    fields jsonb,
    batch_started_at timestamp with time zone,
    invalid_reason text,
    error_code text
)
PARTITION BY RANGE (batch_started_at);


--
-- Name: sync_changelog_p20261120; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.sync_changelog_p20261120 (
    sync_id bigint,
    sync_run_id bigint,
    op_type text,
    row_id text,
    status text,
    failure_reason text,
    fields jsonb,
    batch_started_at timestamp with time zone,
    invalid_reason text,
    error_code text
);


--
-- Name: sync_changelog_p20261121; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.sync_changelog_p20261121 (
    sync_id bigint,
    sync_run_id bigint,
    op_type text,
    row_id text,
    status text,
    failure_reason text,
    fields jsonb,
    batch_started_at timestamp with time zone,
    invalid_reason text,
    error_code text
);


--
-- Name: sync_changelog_p20261122; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.sync_changelog_p20261122 (
    sync_id bigint,
    sync_run_id bigint,
    op_type text,
    row_id text,
    status text,
    failure_reason text,
    fields jsonb,
    batch_started_at timestamp with time zone,
    invalid_reason text,
    error_code text
);


--
-- Name: sync_runs; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.sync_runs (
    sync_id bigint,
    sync_run_id bigint,
    primary_key text,
    destination text,
    model_name text,
    model_id bigint,
    status text,
    error text,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    num_planned_add bigint,
    num_planned_change bigint,
    num_planned_remove bigint,
    num_attempted_add bigint,
    num_attempted_change bigint,
    num_attempted_remove bigint,
    num_succeeded_add bigint,
    num_succeeded_change bigint,
    num_succeeded_remove bigint,
    num_failed_add bigint,
    num_failed_change bigint,
    num_failed_remove bigint,
    extra jsonb
);


--
-- Name: sync_snapshot; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.sync_snapshot (
    sync_id bigint,
    op_type text,
    row_id text,
    status text,
    failure_reason text,
    fields jsonb,
    fields_hash text,
    last_sync_run_id bigint,
    invalid_reason text,
    error_code text
);


--
-- Name: synclog_snapshot_baseline; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.synclog_snapshot_baseline (
    sync_id bigint,
    op_type text,
    row_id text,
    status text,
    failure_reason text,
    fields jsonb,
    fields_hash text,
    last_sync_run_id bigint,
    invalid_reason text,
    error_code text,
    baseline_run_id bigint,
    existed boolean
);


--
-- Name: synclog_versions; Type: TABLE; Schema: hightouch_audit; Owner: -
--

CREATE TABLE hightouch_audit.synclog_versions (
    table_name text,
    version integer,
    added_columns text,
    applied_at timestamp with time zone
);


--
-- Name: sync_log_records_p20261120; Type: TABLE ATTACH; Schema: census; Owner: -
--

ALTER TABLE ONLY census.sync_log_records ATTACH PARTITION census.sync_log_records_p20261120 FOR VALUES FROM ('2026-11-20 00:00:00+00') TO ('2026-11-21 00:00:00+00');


--
-- Name: sync_log_records_p20261121; Type: TABLE ATTACH; Schema: census; Owner: -
--

ALTER TABLE ONLY census.sync_log_records ATTACH PARTITION census.sync_log_records_p20261121 FOR VALUES FROM ('2026-11-21 00:00:00+00') TO ('2026-11-22 00:00:00+00');


--
-- Name: sync_log_records_p20261122; Type: TABLE ATTACH; Schema: census; Owner: -
--

ALTER TABLE ONLY census.sync_log_records ATTACH PARTITION census.sync_log_records_p20261122 FOR VALUES FROM ('2026-11-22 00:00:00+00') TO ('2026-11-23 00:00:00+00');


--
-- Name: sync_changelog_p20261120; Type: TABLE ATTACH; Schema: hightouch_audit; Owner: -
--

ALTER TABLE ONLY hightouch_audit.sync_changelog ATTACH PARTITION hightouch_audit.sync_changelog_p20261120 FOR VALUES FROM ('2026-11-20 00:00:00+00') TO ('2026-11-21 00:00:00+00');


--
-- Name: sync_changelog_p20261121; Type: TABLE ATTACH; Schema: hightouch_audit; Owner: -
--

ALTER TABLE ONLY hightouch_audit.sync_changelog ATTACH PARTITION hightouch_audit.sync_changelog_p20261121 FOR VALUES FROM ('2026-11-21 00:00:00+00') TO ('2026-11-22 00:00:00+00');


--
-- Name: sync_changelog_p20261122; Type: TABLE ATTACH; Schema: hightouch_audit; Owner: -
--

ALTER TABLE ONLY hightouch_audit.sync_changelog ATTACH PARTITION hightouch_audit.sync_changelog_p20261122 FOR VALUES FROM ('2026-11-22 00:00:00+00') TO ('2026-11-23 00:00:00+00');


--
-- Data for Name: destination_objects; Type: TABLE DATA; Schema: census; Owner: -
--

INSERT INTO census.destination_objects VALUES (401, 'Salesforce::ObjectTypes::Contact', 'Contact');


--
-- Data for Name: destinations; Type: TABLE DATA; Schema: census; Owner: -
--

INSERT INTO census.destinations VALUES (301, 'Salesforce::Connection', 'Salesforce');


--
-- Data for Name: source_objects; Type: TABLE DATA; Schema: census; Owner: -
--

INSERT INTO census.source_objects VALUES (201, 'DataWarehouse::FilterSegmentSource', 'High-value customers', NULL, NULL, 31, NULL);


--
-- Data for Name: sync_log_records_p20261120; Type: TABLE DATA; Schema: census; Owner: -
--

INSERT INTO census.sync_log_records_p20261120 VALUES ('03e86c7ab6a2c11aaae8efe01f00907b', 101, 1, 'a@101', '{"day": 0, "who": "a"}', '2026-11-20 09:00:00+00', '2026-11-20 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:00.90963+00', 301, 401, 101, 201, 0, NULL, NULL);
INSERT INTO census.sync_log_records_p20261120 VALUES ('2a8a128e5f7d7b492f1f1bba5fb47483', 101, 1, 'b@101', '{"day": 0, "who": "b"}', '2026-11-20 09:00:00+00', '2026-11-20 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:00.90963+00', 301, 401, 101, 201, 0, NULL, NULL);
INSERT INTO census.sync_log_records_p20261120 VALUES ('36a31db79b8216c1839f28c9cb4d9842', 101, 1, 'c@101', '{"day": 0, "who": "c"}', '2026-11-20 09:00:00+00', '2026-11-20 09:00:30+00', 'upsert', 'rejected', 'INVALID: no', '2026-11-26 14:45:00.90963+00', 301, 401, 101, 201, 0, NULL, 'INVALID');
INSERT INTO census.sync_log_records_p20261120 VALUES ('4ca4513d6554017ffb1526ee12702ad8', 101, 1, 'd@101', '{"day": 0, "who": "d"}', '2026-11-20 09:00:00+00', '2026-11-20 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:00.90963+00', 301, 401, 101, 201, 0, NULL, NULL);


--
-- Data for Name: sync_log_records_p20261121; Type: TABLE DATA; Schema: census; Owner: -
--

INSERT INTO census.sync_log_records_p20261121 VALUES ('2184cc50e91271bc4458bf51d5206b94', 101, 2, 'a@101', '{"day": 1, "who": "a"}', '2026-11-21 09:00:00+00', '2026-11-21 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:05.185121+00', 301, 401, 101, 201, 0, NULL, NULL);
INSERT INTO census.sync_log_records_p20261121 VALUES ('91e9e079f7d3c56bb06cc29745de1cc0', 101, 2, 'b@101', '{"day": 1, "who": "b"}', '2026-11-21 09:00:00+00', '2026-11-21 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:05.185121+00', 301, 401, 101, 201, 0, NULL, NULL);
INSERT INTO census.sync_log_records_p20261121 VALUES ('92d1c087e2307304f2073391bd6ecc6b', 101, 2, 'c@101', '{"day": 1, "who": "c"}', '2026-11-21 09:00:00+00', '2026-11-21 09:00:30+00', 'upsert', 'rejected', 'INVALID: no', '2026-11-26 14:45:05.185121+00', 301, 401, 101, 201, 0, NULL, 'INVALID');
INSERT INTO census.sync_log_records_p20261121 VALUES ('281da931659f91f60f8a9cb81aba7a9e', 101, 2, 'd@101', '{"day": 1, "who": "d"}', '2026-11-21 09:00:00+00', '2026-11-21 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:05.185121+00', 301, 401, 101, 201, 0, NULL, NULL);


--
-- Data for Name: sync_log_records_p20261122; Type: TABLE DATA; Schema: census; Owner: -
--

INSERT INTO census.sync_log_records_p20261122 VALUES ('38420efad36c30c89c8980e2163cc197', 202, 5, 'a@202', '{"day": 2, "who": "a"}', '2026-11-22 09:00:00+00', '2026-11-22 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:10.115824+00', 301, 401, 101, 201, 0, NULL, NULL);
INSERT INTO census.sync_log_records_p20261122 VALUES ('ea4c1018d59b387954b0420209a8e2ed', 202, 5, 'b@202', '{"day": 2, "who": "b"}', '2026-11-22 09:00:00+00', '2026-11-22 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:10.115824+00', 301, 401, 101, 201, 0, NULL, NULL);
INSERT INTO census.sync_log_records_p20261122 VALUES ('0a5350273b68fdc261c22cea0c776221', 202, 5, 'c@202', '{"day": 2, "who": "c"}', '2026-11-22 09:00:00+00', '2026-11-22 09:00:30+00', 'upsert', 'rejected', 'INVALID: no', '2026-11-26 14:45:10.115824+00', 301, 401, 101, 201, 0, NULL, 'INVALID');
INSERT INTO census.sync_log_records_p20261122 VALUES ('e96682636f96216e6bb13128b063ee61', 202, 5, 'd@202', '{"day": 2, "who": "d"}', '2026-11-22 09:00:00+00', '2026-11-22 09:00:30+00', 'upsert', 'succeeded', NULL, '2026-11-26 14:45:10.115824+00', 301, 401, 101, 201, 0, NULL, NULL);


--
-- Data for Name: synclog_versions; Type: TABLE DATA; Schema: census; Owner: -
--

INSERT INTO census.synclog_versions VALUES ('sync_log_records', 1, 'log_id,sync_id,sync_run_id,record_identifier,record_payload,batch_started_at,batch_completed_at,operation,status,status_message,_census_logged_at,destination_id,destination_object_id,source_id,source_object_id,batch_number,invalid_reason,error_code', '2026-11-26 14:45:01.074973+00');
INSERT INTO census.synclog_versions VALUES ('source_objects', 1, 'id,type,name,model_id,business_object_id,filter_segment_id,cohort_id', '2026-11-26 14:45:01.081069+00');
INSERT INTO census.synclog_versions VALUES ('destinations', 1, 'id,type,name', '2026-11-26 14:45:01.085499+00');
INSERT INTO census.synclog_versions VALUES ('destination_objects', 1, 'id,type,name', '2026-11-26 14:45:01.089914+00');


--
-- Data for Name: sync_changelog_p20261120; Type: TABLE DATA; Schema: hightouch_audit; Owner: -
--

INSERT INTO hightouch_audit.sync_changelog_p20261120 VALUES (101, 1, 'added', 'b@101', 'succeeded', NULL, '{"day": 0, "who": "b"}', '2026-11-20 09:00:00+00', NULL, NULL);
INSERT INTO hightouch_audit.sync_changelog_p20261120 VALUES (101, 1, 'added', 'a@101', 'succeeded', NULL, '{"day": 0, "who": "a"}', '2026-11-20 09:00:00+00', NULL, NULL);
INSERT INTO hightouch_audit.sync_changelog_p20261120 VALUES (101, 1, 'added', 'c@101', 'failed', 'INVALID: no', '{"day": 0, "who": "c"}', '2026-11-20 09:00:00+00', NULL, 'INVALID');
INSERT INTO hightouch_audit.sync_changelog_p20261120 VALUES (101, 1, 'added', 'd@101', 'succeeded', NULL, '{"day": 0, "who": "d"}', '2026-11-20 09:00:00+00', NULL, NULL);


--
-- Data for Name: sync_changelog_p20261121; Type: TABLE DATA; Schema: hightouch_audit; Owner: -
--

INSERT INTO hightouch_audit.sync_changelog_p20261121 VALUES (101, 2, 'changed', 'a@101', 'succeeded', NULL, '{"day": 1, "who": "a"}', '2026-11-21 09:00:00+00', NULL, NULL);
INSERT INTO hightouch_audit.sync_changelog_p20261121 VALUES (101, 2, 'changed', 'b@101', 'succeeded', NULL, '{"day": 1, "who": "b"}', '2026-11-21 09:00:00+00', NULL, NULL);
INSERT INTO hightouch_audit.sync_changelog_p20261121 VALUES (101, 2, 'changed', 'c@101', 'failed', 'INVALID: no', '{"day": 1, "who": "c"}', '2026-11-21 09:00:00+00', NULL, 'INVALID');
INSERT INTO hightouch_audit.sync_changelog_p20261121 VALUES (101, 2, 'changed', 'd@101', 'succeeded', NULL, '{"day": 1, "who": "d"}', '2026-11-21 09:00:00+00', NULL, NULL);


--
-- Data for Name: sync_changelog_p20261122; Type: TABLE DATA; Schema: hightouch_audit; Owner: -
--

INSERT INTO hightouch_audit.sync_changelog_p20261122 VALUES (202, 5, 'added', 'a@202', 'succeeded', NULL, '{"day": 2, "who": "a"}', '2026-11-22 09:00:00+00', NULL, NULL);
INSERT INTO hightouch_audit.sync_changelog_p20261122 VALUES (202, 5, 'added', 'b@202', 'succeeded', NULL, '{"day": 2, "who": "b"}', '2026-11-22 09:00:00+00', NULL, NULL);
INSERT INTO hightouch_audit.sync_changelog_p20261122 VALUES (202, 5, 'added', 'c@202', 'failed', 'INVALID: no', '{"day": 2, "who": "c"}', '2026-11-22 09:00:00+00', NULL, 'INVALID');
INSERT INTO hightouch_audit.sync_changelog_p20261122 VALUES (202, 5, 'added', 'd@202', 'succeeded', NULL, '{"day": 2, "who": "d"}', '2026-11-22 09:00:00+00', NULL, NULL);


--
-- Data for Name: sync_runs; Type: TABLE DATA; Schema: hightouch_audit; Owner: -
--

INSERT INTO hightouch_audit.sync_runs VALUES (101, 1, 'email', 'Salesforce', 'High-value customers', 51, 'succeeded', NULL, '2026-11-20 09:00:00+00', '2026-11-20 10:00:00+00', 4, 0, 0, 4, 0, 0, 3, 0, 0, 1, 0, 0, NULL);
INSERT INTO hightouch_audit.sync_runs VALUES (101, 2, 'email', 'Salesforce', 'High-value customers', 51, 'succeeded', NULL, '2026-11-21 09:00:00+00', '2026-11-21 10:00:00+00', 0, 4, 0, 0, 4, 0, 0, 3, 0, 0, 1, 0, NULL);
INSERT INTO hightouch_audit.sync_runs VALUES (202, 5, 'email', 'Salesforce', 'High-value customers', 51, 'succeeded', NULL, '2026-11-22 09:00:00+00', '2026-11-22 10:00:00+00', 4, 0, 0, 4, 0, 0, 3, 0, 0, 1, 0, 0, NULL);


--
-- Data for Name: sync_snapshot; Type: TABLE DATA; Schema: hightouch_audit; Owner: -
--

INSERT INTO hightouch_audit.sync_snapshot VALUES (101, 'changed', 'a@101', 'succeeded', NULL, '{"day": 1, "who": "a"}', '883ffd1b5697b99dfee244d43cc08af3', 2, NULL, NULL);
INSERT INTO hightouch_audit.sync_snapshot VALUES (101, 'changed', 'b@101', 'succeeded', NULL, '{"day": 1, "who": "b"}', '7f12e94f5b599c44c98ee754868b5030', 2, NULL, NULL);
INSERT INTO hightouch_audit.sync_snapshot VALUES (101, 'changed', 'c@101', 'failed', 'INVALID: no', '{"day": 1, "who": "c"}', 'cd7ef4f79f7669eafc606ffa7ca48a81', 2, NULL, 'INVALID');
INSERT INTO hightouch_audit.sync_snapshot VALUES (101, 'changed', 'd@101', 'succeeded', NULL, '{"day": 1, "who": "d"}', '8a79a5e811a89df72dc57c4f2861f2d3', 2, NULL, NULL);
INSERT INTO hightouch_audit.sync_snapshot VALUES (202, 'added', 'a@202', 'succeeded', NULL, '{"day": 2, "who": "a"}', '0174e28449461652a72f01c16e3b45d6', 5, NULL, NULL);
INSERT INTO hightouch_audit.sync_snapshot VALUES (202, 'added', 'b@202', 'succeeded', NULL, '{"day": 2, "who": "b"}', '40f6a039feeefa9d86a4d5778d41bd26', 5, NULL, NULL);
INSERT INTO hightouch_audit.sync_snapshot VALUES (202, 'added', 'c@202', 'failed', 'INVALID: no', '{"day": 2, "who": "c"}', '180ceb699944a1e2058819740f68fc53', 5, NULL, 'INVALID');
INSERT INTO hightouch_audit.sync_snapshot VALUES (202, 'added', 'd@202', 'succeeded', NULL, '{"day": 2, "who": "d"}', '67c11ceeb937d25893dd905c47e62c70', 5, NULL, NULL);


--
-- Data for Name: synclog_snapshot_baseline; Type: TABLE DATA; Schema: hightouch_audit; Owner: -
--

INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (101, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 2, NULL);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (101, 'added', 'a@101', 'succeeded', NULL, '{"day": 0, "who": "a"}', 'e3faa008a328df132fb2f756d2b2f136', 1, NULL, NULL, 2, true);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (101, 'added', 'b@101', 'succeeded', NULL, '{"day": 0, "who": "b"}', '28519c6c4917354a0ac4c672ac201de1', 1, NULL, NULL, 2, true);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (101, 'added', 'c@101', 'failed', 'INVALID: no', '{"day": 0, "who": "c"}', 'f1988c9c2e71d6391f23f0f8dbb770ac', 1, NULL, 'INVALID', 2, true);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (101, 'added', 'd@101', 'succeeded', NULL, '{"day": 0, "who": "d"}', 'd27820aa631ab3ff8620452ef9b89487', 1, NULL, NULL, 2, true);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (202, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 5, NULL);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (202, NULL, 'a@202', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 5, false);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (202, NULL, 'b@202', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 5, false);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (202, NULL, 'c@202', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 5, false);
INSERT INTO hightouch_audit.synclog_snapshot_baseline VALUES (202, NULL, 'd@202', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 5, false);


--
-- Data for Name: synclog_versions; Type: TABLE DATA; Schema: hightouch_audit; Owner: -
--

INSERT INTO hightouch_audit.synclog_versions VALUES ('synclog_snapshot_baseline', 1, 'sync_id,op_type,row_id,status,failure_reason,fields,fields_hash,last_sync_run_id,invalid_reason,error_code,baseline_run_id,existed', '2026-11-26 14:45:02.582522+00');
INSERT INTO hightouch_audit.synclog_versions VALUES ('sync_snapshot', 1, 'sync_id,op_type,row_id,status,failure_reason,fields,fields_hash,last_sync_run_id,invalid_reason,error_code', '2026-11-26 14:45:03.735986+00');
INSERT INTO hightouch_audit.synclog_versions VALUES ('sync_changelog', 1, 'sync_id,sync_run_id,op_type,row_id,status,failure_reason,fields,batch_started_at,invalid_reason,error_code', '2026-11-26 14:45:04.225146+00');
INSERT INTO hightouch_audit.synclog_versions VALUES ('sync_runs', 1, 'sync_id,sync_run_id,primary_key,destination,model_name,model_id,status,error,started_at,finished_at,num_planned_add,num_planned_change,num_planned_remove,num_attempted_add,num_attempted_change,num_attempted_remove,num_succeeded_add,num_succeeded_change,num_succeeded_remove,num_failed_add,num_failed_change,num_failed_remove,extra', '2026-11-26 14:45:05.152408+00');


--
-- Name: destination_objects_replace_key; Type: INDEX; Schema: census; Owner: -
--

CREATE INDEX destination_objects_replace_key ON census.destination_objects USING btree (id);


--
-- Name: destinations_replace_key; Type: INDEX; Schema: census; Owner: -
--

CREATE INDEX destinations_replace_key ON census.destinations USING btree (id);


--
-- Name: source_objects_replace_key; Type: INDEX; Schema: census; Owner: -
--

CREATE INDEX source_objects_replace_key ON census.source_objects USING btree (id);


--
-- Name: sync_log_records_replace_key; Type: INDEX; Schema: census; Owner: -
--

CREATE INDEX sync_log_records_replace_key ON ONLY census.sync_log_records USING btree (sync_run_id, batch_number);


--
-- Name: sync_log_records_p20261120_sync_run_id_batch_number_idx; Type: INDEX; Schema: census; Owner: -
--

CREATE INDEX sync_log_records_p20261120_sync_run_id_batch_number_idx ON census.sync_log_records_p20261120 USING btree (sync_run_id, batch_number);


--
-- Name: sync_log_records_p20261121_sync_run_id_batch_number_idx; Type: INDEX; Schema: census; Owner: -
--

CREATE INDEX sync_log_records_p20261121_sync_run_id_batch_number_idx ON census.sync_log_records_p20261121 USING btree (sync_run_id, batch_number);


--
-- Name: sync_log_records_p20261122_sync_run_id_batch_number_idx; Type: INDEX; Schema: census; Owner: -
--

CREATE INDEX sync_log_records_p20261122_sync_run_id_batch_number_idx ON census.sync_log_records_p20261122 USING btree (sync_run_id, batch_number);


--
-- Name: sync_changelog_replace_key; Type: INDEX; Schema: hightouch_audit; Owner: -
--

CREATE INDEX sync_changelog_replace_key ON ONLY hightouch_audit.sync_changelog USING btree (sync_run_id);


--
-- Name: sync_changelog_p20261120_sync_run_id_idx; Type: INDEX; Schema: hightouch_audit; Owner: -
--

CREATE INDEX sync_changelog_p20261120_sync_run_id_idx ON hightouch_audit.sync_changelog_p20261120 USING btree (sync_run_id);


--
-- Name: sync_changelog_p20261121_sync_run_id_idx; Type: INDEX; Schema: hightouch_audit; Owner: -
--

CREATE INDEX sync_changelog_p20261121_sync_run_id_idx ON hightouch_audit.sync_changelog_p20261121 USING btree (sync_run_id);


--
-- Name: sync_changelog_p20261122_sync_run_id_idx; Type: INDEX; Schema: hightouch_audit; Owner: -
--

CREATE INDEX sync_changelog_p20261122_sync_run_id_idx ON hightouch_audit.sync_changelog_p20261122 USING btree (sync_run_id);


--
-- Name: sync_runs_replace_key; Type: INDEX; Schema: hightouch_audit; Owner: -
--

CREATE INDEX sync_runs_replace_key ON hightouch_audit.sync_runs USING btree (sync_run_id);


--
-- Name: sync_snapshot_replace_key; Type: INDEX; Schema: hightouch_audit; Owner: -
--

CREATE INDEX sync_snapshot_replace_key ON hightouch_audit.sync_snapshot USING btree (sync_id);


--
-- Name: synclog_snapshot_baseline_replace_key; Type: INDEX; Schema: hightouch_audit; Owner: -
--

CREATE INDEX synclog_snapshot_baseline_replace_key ON hightouch_audit.synclog_snapshot_baseline USING btree (sync_id);


--
-- Name: sync_log_records_p20261120_sync_run_id_batch_number_idx; Type: INDEX ATTACH; Schema: census; Owner: -
--

ALTER INDEX census.sync_log_records_replace_key ATTACH PARTITION census.sync_log_records_p20261120_sync_run_id_batch_number_idx;


--
-- Name: sync_log_records_p20261121_sync_run_id_batch_number_idx; Type: INDEX ATTACH; Schema: census; Owner: -
--

ALTER INDEX census.sync_log_records_replace_key ATTACH PARTITION census.sync_log_records_p20261121_sync_run_id_batch_number_idx;


--
-- Name: sync_log_records_p20261122_sync_run_id_batch_number_idx; Type: INDEX ATTACH; Schema: census; Owner: -
--

ALTER INDEX census.sync_log_records_replace_key ATTACH PARTITION census.sync_log_records_p20261122_sync_run_id_batch_number_idx;


--
-- Name: sync_changelog_p20261120_sync_run_id_idx; Type: INDEX ATTACH; Schema: hightouch_audit; Owner: -
--

ALTER INDEX hightouch_audit.sync_changelog_replace_key ATTACH PARTITION hightouch_audit.sync_changelog_p20261120_sync_run_id_idx;


--
-- Name: sync_changelog_p20261121_sync_run_id_idx; Type: INDEX ATTACH; Schema: hightouch_audit; Owner: -
--

ALTER INDEX hightouch_audit.sync_changelog_replace_key ATTACH PARTITION hightouch_audit.sync_changelog_p20261121_sync_run_id_idx;


--
-- Name: sync_changelog_p20261122_sync_run_id_idx; Type: INDEX ATTACH; Schema: hightouch_audit; Owner: -
--

ALTER INDEX hightouch_audit.sync_changelog_replace_key ATTACH PARTITION hightouch_audit.sync_changelog_p20261122_sync_run_id_idx;


--
-- PostgreSQL database dump complete
--


