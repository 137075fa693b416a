"""One APIRouter per resource: lobbies, games (with replays), health."""
