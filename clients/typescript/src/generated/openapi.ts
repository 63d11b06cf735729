/** The server's OpenAPI document as types: generated from openapi.json (sha256 1161873f6f57d0c7226c3acb59bc5e43f552e89889d49f58b1031bba55b72673)
 * by `make client-types`; never edit by hand. */
export interface paths {
    "/api/v1/memory/applyForgetting": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Forget what the forgetting policy selects (dry run by default). */
        post: operations["memory.applyForgetting"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/applyRetention": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Forget the facts past their retention (dry run by default). */
        post: operations["memory.applyRetention"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/consolidate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Merge exact duplicates per the consolidation policy (dry run by default). */
        post: operations["memory.consolidate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/count": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** How many facts list returns over all its pages, with the same filters. */
        post: operations["memory.count"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/explain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Why a fact came back for a query, or why not (404 for an unknown id). */
        post: operations["memory.explain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/forget": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Remove the facts of one scope (text zeroed before it returns). */
        post: operations["memory.forget"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** One fact (404 for an unknown or forgotten id). */
        post: operations["memory.get"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** The supersession chain of a fact, oldest first (404 for an unknown id). */
        post: operations["memory.history"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/hydrate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** The bytes of a file-backed fact, sha256 checked (base64; 409 provenance_error). */
        post: operations["memory.hydrate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** One page of facts, newest first, with the cursor of the next page (null on the last); a listing never skips or repeats a fact, whatever is written meanwhile. */
        post: operations["memory.list"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/load": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Load a Markdown document as episodes (idempotent by content). */
        post: operations["memory.load"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/profile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A prompt-ready block of the current profile facts of a namespace. */
        post: operations["memory.profile"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/recall": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Search the facts, with the temporal options. */
        post: operations["memory.recall"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/remember": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Remember one fact (idempotent by id; a different payload is 409). */
        post: operations["memory.remember"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/rememberFile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Remember a reference to a file's bytes under the configured fileBase (422 when the server has none). */
        post: operations["memory.rememberFile"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/rememberMany": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Remember facts in one transaction: all of them or none. */
        post: operations["memory.rememberMany"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memory/setRetention": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Set (keepForMs) or remove (null) the default retention of a namespace; the defaults after the change. */
        post: operations["memory.setRetention"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/memories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One page of facts, newest first, with the cursor of the next page (null on the last); a listing never skips or repeats a fact, whatever is written meanwhile. */
        get: operations["memories.list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One page of facts, newest first, with the cursor of the next page (null on the last); a listing never skips or repeats a fact, whatever is written meanwhile. */
        get: operations["memories.listV1"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/documents/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rank documents (BM25, cosine, fusion). */
        post: operations["documents.search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/documents/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One document (404 if none). */
        get: operations["documents.get"];
        /** Store a document (replaces the id). */
        put: operations["documents.put"];
        post?: never;
        /** Delete a document (404 if none); purge=true also compacts. */
        delete: operations["documents.delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness. */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document. */
        get: operations["openapi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description a vector of numbers in float32's range; every vector of a store has the dimension of its first (or the server's --input-dim) */
        Embedding: number[];
        Error: {
            error: {
                code: string;
                message: string;
                hint?: string;
            };
        };
        /** @description validTo, when given with validFrom, must be after it (422 otherwise) */
        RememberInput: {
            /** @description the fact: not only white space, at most 64 KiB of UTF-8 and 4096 words */
            text: string;
            id?: string | null;
            subject?: string | null;
            entities?: string[];
            metadata?: Record<string, unknown> | null;
            embedding?: components["schemas"]["Embedding"] | null;
            eventTime?: number | null;
            validFrom?: number | null;
            validTo?: number | null;
            /** @description ids of stored facts (or of facts earlier in the same rememberMany) */
            supersedes?: string[];
            /** @enum {string} */
            kind?: "fact" | "profile" | "procedure" | "episode";
            namespace?: string;
            sources?: string[];
            actor?: string | null;
            importance?: number | null;
            retainUntil?: number | null;
        };
        RememberResult: {
            id: string;
            created: boolean;
            superseded: string[];
        };
        FileRef: {
            uri: string;
            offset: number;
            length: number;
            format: string | null;
            sha256: string;
            size: number;
            mtime: number;
            summary: string | null;
        };
        Fact: {
            id: string;
            text: string;
            /** @enum {string} */
            kind: "fact" | "profile" | "procedure" | "episode";
            namespace: string;
            subject: string | null;
            entities: string[];
            metadata: Record<string, unknown> | null;
            embedding: number[] | null;
            eventTime: number | null;
            validFrom: number | null;
            validTo: number | null;
            ingestTime: number;
            supersedes: string[];
            sources: string[];
            actor: string | null;
            importance: number | null;
            file: components["schemas"]["FileRef"] | null;
            retainUntil: number | null;
        };
        Page: {
            items: components["schemas"]["Fact"][];
            nextCursor: string | null;
        };
        Explanation: {
            id: string;
            lexical: number | null;
            semantic: number | null;
            fusion: string;
            weights: {
                [key: string]: number;
            };
            matchedTerms: string[];
            recencyMultiplier: number;
            historicalMultiplier: number;
            importanceMultiplier: number;
            /** @enum {string} */
            status: "current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention";
            evaluatedAt: number;
            validFrom: number | null;
            validTo: number | null;
            rank: number | null;
            chain: string[];
            score: number | null;
            known: boolean;
            note: string | null;
        };
        RecallHit: {
            fact: components["schemas"]["Fact"];
            score: number;
            /** @enum {string} */
            status: "current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention";
            explanation: components["schemas"]["Explanation"] | null;
        };
        ForgetReport: {
            removed: string[];
            relinked: string[];
            dryRun: boolean;
        };
        ConsolidateReport: {
            created: string[];
            superseded: string[];
            removed: string[];
            dryRun: boolean;
        };
        LoadResult: {
            episodes: string[];
            facts: string[];
        };
        Profile: {
            block: string;
            counts: {
                [key: string]: number;
            };
        };
        Document: {
            id: string;
            text: string;
            metadata: Record<string, unknown> | null;
            embedding: number[] | null;
        };
        DocumentInput: {
            /** @description at most 1 MiB of UTF-8 */
            text: string;
            metadata?: Record<string, unknown> | null;
            embedding?: components["schemas"]["Embedding"] | null;
        };
        PutResult: {
            id: string;
            created: boolean;
            revision: number;
        };
        DeleteResult: {
            id: string;
            /** @constant */
            deleted: true;
        };
        SearchRequest: {
            /** @description at most 64 KiB of UTF-8 */
            query: string;
            k?: number;
            embedding?: components["schemas"]["Embedding"] | null;
            ids?: string[] | null;
            metadata?: Record<string, unknown> | null;
            semantic?: "ngram" | null;
            lexicalWeight?: number;
            semanticWeight?: number;
        };
        Hit: {
            id: string;
            score: number;
            lexical: number | null;
            semantic: number | null;
        };
        Health: {
            /** @constant */
            status: "ok";
            replication?: {
                target: string;
                maxLagMs: number;
                tenants: {
                    [key: string]: {
                        state?: string | null;
                        lagMs?: number;
                        lagP99Ms?: number;
                        pendingBytes?: number;
                        errors?: number;
                    };
                };
            };
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    "memory.applyForgetting": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    dryRun?: boolean;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForgetReport"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.applyRetention": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    dryRun?: boolean;
                    purge?: boolean;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForgetReport"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.consolidate": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    dryRun?: boolean;
                    allowDestructive?: boolean;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConsolidateReport"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.count": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    namespace?: string | null;
                    subject?: string | null;
                    entity?: string | null;
                    kind?: ("fact" | "profile" | "procedure" | "episode") | ("fact" | "profile" | "procedure" | "episode")[] | null;
                    /** @description default 'current'; 'all' (alone or among others) for every status */
                    status?: ("current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention") | "all" | (("current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention") | "all")[] | null;
                    metadata?: Record<string, unknown> | null;
                    asOf?: number | null;
                    knownAt?: number | null;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        count: number;
                    };
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.explain": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description at most 64 KiB of UTF-8 */
                    query: string;
                    k?: number;
                    asOf?: number | null;
                    knownAt?: number | null;
                    /** @enum {string} */
                    history?: "current" | "all" | "historical";
                    subject?: string | null;
                    entity?: string | null;
                    namespace?: string | null;
                    kinds?: ("fact" | "profile" | "procedure" | "episode") | ("fact" | "profile" | "procedure" | "episode")[] | null;
                    embedding?: components["schemas"]["Embedding"] | null;
                    candidateLimit?: number;
                    /** @description an id: 1 to 512 bytes of UTF-8, no control characters */
                    id: string;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Explanation"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.forget": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description exactly one key */
                    scope: {
                        /** @description ids to remove; what is not the id of a fact is ignored */
                        ids?: unknown[];
                        subject?: string;
                        entity?: string;
                        namespace?: string;
                        source?: string;
                        /** @description milliseconds since the Unix epoch (UTC); a number without a fraction (582 or 582.0) */
                        ingestedBefore?: number;
                        /** @description milliseconds since the Unix epoch (UTC); a number without a fraction (582 or 582.0) */
                        eventBefore?: number;
                        metadata?: Record<string, unknown>;
                    };
                    includeChain?: boolean;
                    dryRun?: boolean;
                    purge?: boolean;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForgetReport"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description an id: 1 to 512 bytes of UTF-8, no control characters */
                    id: string;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Fact"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.history": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description an id: 1 to 512 bytes of UTF-8, no control characters */
                    id: string;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: components["schemas"]["Fact"][];
                    };
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.hydrate": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description an id: 1 to 512 bytes of UTF-8, no control characters */
                    id: string;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        length: number;
                        base64: string;
                    };
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.list": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    namespace?: string | null;
                    subject?: string | null;
                    entity?: string | null;
                    kind?: ("fact" | "profile" | "procedure" | "episode") | ("fact" | "profile" | "procedure" | "episode")[] | null;
                    /** @description default 'current'; 'all' (alone or among others) for every status */
                    status?: ("current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention") | "all" | (("current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention") | "all")[] | null;
                    metadata?: Record<string, unknown> | null;
                    asOf?: number | null;
                    knownAt?: number | null;
                    limit?: number;
                    cursor?: string | null;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.load": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description a document name: an id without '/', not only white space */
                    document: string;
                    text: string;
                    namespace?: string;
                    actor?: string | null;
                    observedAt?: number | null;
                    chunkChars?: number;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LoadResult"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.profile": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    namespace?: string;
                    budgetChars?: number;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Profile"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.recall": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description at most 64 KiB of UTF-8 */
                    query: string;
                    k?: number;
                    asOf?: number | null;
                    knownAt?: number | null;
                    /** @enum {string} */
                    history?: "current" | "all" | "historical";
                    subject?: string | null;
                    entity?: string | null;
                    namespace?: string | null;
                    kinds?: ("fact" | "profile" | "procedure" | "episode") | ("fact" | "profile" | "procedure" | "episode")[] | null;
                    embedding?: components["schemas"]["Embedding"] | null;
                    candidateLimit?: number;
                    explain?: boolean;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: components["schemas"]["RecallHit"][];
                    };
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.remember": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RememberInput"];
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RememberResult"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.rememberFile": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description a path under the server's fileBase (relative to it, or absolute inside it) or a file:// URI of one; no other scheme */
                    uri: string;
                    byteRange?: number[] | null;
                    format?: string | null;
                    summary?: string | null;
                    id?: string | null;
                    subject?: string | null;
                    entities?: string[];
                    metadata?: Record<string, unknown> | null;
                    embedding?: components["schemas"]["Embedding"] | null;
                    eventTime?: number | null;
                    validFrom?: number | null;
                    validTo?: number | null;
                    /** @description ids of stored facts (or of facts earlier in the same rememberMany) */
                    supersedes?: string[];
                    /** @enum {string} */
                    kind?: "fact" | "profile" | "procedure" | "episode";
                    namespace?: string;
                    sources?: string[];
                    actor?: string | null;
                    importance?: number | null;
                    retainUntil?: number | null;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RememberResult"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.rememberMany": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    inputs: components["schemas"]["RememberInput"][];
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: components["schemas"]["RememberResult"][];
                    };
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.setRetention": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    namespace: string;
                    keepForMs: number | null;
                };
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        retention: {
                            [key: string]: number;
                        };
                    };
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memories.list": {
        parameters: {
            query?: {
                namespace?: string;
                subject?: string;
                entity?: string;
                kind?: ("fact" | "profile" | "procedure" | "episode")[];
                /** @description default current; 'all' for every status */
                status?: (("current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention") | "all")[];
                asOf?: number;
                knownAt?: number;
                limit?: number;
                cursor?: string;
            };
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memories.listV1": {
        parameters: {
            query?: {
                namespace?: string;
                subject?: string;
                entity?: string;
                kind?: ("fact" | "profile" | "procedure" | "episode")[];
                /** @description default current; 'all' for every status */
                status?: (("current" | "superseded" | "expired" | "not-yet-valid" | "expired-retention") | "all")[];
                asOf?: number;
                knownAt?: number;
                limit?: number;
                cursor?: string;
            };
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "documents.search": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SearchRequest"];
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: components["schemas"]["Hit"][];
                    };
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "documents.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path: {
                /** @description the document id, percent-encoded */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Document"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "documents.put": {
        parameters: {
            query?: never;
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path: {
                /** @description the document id, percent-encoded */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DocumentInput"];
            };
        };
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PutResult"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "documents.delete": {
        parameters: {
            query?: {
                purge?: "true" | "false";
            };
            header?: {
                /** @description the tenant (its own store); default 'default' */
                "X-HMS-Tenant"?: string;
            };
            path: {
                /** @description the document id, percent-encoded */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeleteResult"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    openapi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description bad JSON, or an invalid X-HMS-Tenant header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description missing, malformed or unknown API key (with --api-keys) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the API key belongs to another tenant, or the request came from a web origin the server does not allow (forbidden_origin) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description unknown id, or unknown operation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description method not allowed on this path */
            405: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the request body did not arrive in time */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description conflict with what the store holds */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the body is larger than --max-body */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description a POST or PUT body not sent as Content-Type: application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the Host header names a host this server does not answer to (invalid_host) */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description invalid request: a field is missing, unknown, or out of its limits */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description internal error (fixed message; details in the server log) */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description the tenant's store is unavailable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
