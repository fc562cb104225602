-- Removes the clients' heartbeat records (0011_clients.sql).
DROP TABLE client_heartbeat;
