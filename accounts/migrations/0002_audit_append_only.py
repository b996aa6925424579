"""The audit log is append-only: the database itself refuses UPDATE and DELETE of its rows."""

from __future__ import annotations

from django.db import migrations

FORBID = """
CREATE OR REPLACE FUNCTION accounts_audit_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: % of an audit entry refused', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER accounts_auditentry_append_only
    BEFORE UPDATE OR DELETE ON accounts_auditentry
    FOR EACH ROW EXECUTE FUNCTION accounts_audit_append_only();
"""
ALLOW = """
DROP TRIGGER IF EXISTS accounts_auditentry_append_only ON accounts_auditentry;
DROP FUNCTION IF EXISTS accounts_audit_append_only();
"""


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]
    operations = [migrations.RunSQL(FORBID, ALLOW)]
