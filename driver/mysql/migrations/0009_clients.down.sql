-- Removes the clients' heartbeat records (0009_clients.sql).
DROP TABLE IF EXISTS client_heartbeat;
