"""What one schema migration is: a name and its statements, rendered for each dialect
(:meth:`Migration.statements_for`): the words in braces are the dialect's
(:data:`~thoughtline.store._sql_dialect.SqlDialect.ddl_words`), and a statement wrapped in
:class:`Only` runs on one dialect alone. The migrations themselves, in order, are
:data:`thoughtline.store.schema.MIGRATIONS`."""

from __future__ import annotations

from dataclasses import dataclass

from thoughtline.store._sql_dialect import DialectName, SqlDialect


@dataclass(frozen=True, slots=True)
class Only:
    """A statement of one dialect alone."""

    dialect: DialectName
    statement: str


@dataclass(frozen=True, slots=True)
class Migration:
    """One named, append-only schema change: statements run in order."""

    name: str
    statements: tuple[str | Only, ...]

    def statements_for(self, dialect: SqlDialect) -> list[str]:
        """The statements as ``dialect`` runs them."""
        return [
            statement.format_map(dialect.ddl_words)
            for statement in (
                item if isinstance(item, str) else item.statement
                for item in self.statements
                if isinstance(item, str) or item.dialect == dialect.name
            )
        ]
