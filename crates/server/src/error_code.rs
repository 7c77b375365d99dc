//! Every machine code an error response carries (`{"error": {"code", ...}}`), one closed set:
//! the OpenAPI document's `Error` schema lists them, and a new code is added here, not typed
//! as a string where the error is made.

rein_core::named_enum! {
    /// A stable machine code of an error response.
    pub enum ApiErrorCode as "error code" {
        /// 400: the request is malformed (the message names the field).
        InvalidRequest = "invalid_request",
        /// 401: no token, or one that is unknown or revoked.
        Unauthorized = "unauthorized",
        /// 403: a browser request from another origin.
        ForbiddenOrigin = "forbidden_origin",
        /// 403: a token whose scopes do not cover the request (a `read` token changing
        /// something).
        InsufficientScope = "insufficient_scope",
        /// 403: a signed-in browser's state-changing request without its session's CSRF token.
        CsrfTokenInvalid = "csrf_token_invalid",
        /// 403: a fork asks for tools the operation it forks could not use.
        ForkWidens = "fork_widens",
        /// 403: changing your password without giving the current one.
        WrongPassword = "wrong_password",
        /// 404: nothing there, or nothing this user may see.
        NotFound = "not_found",
        /// 405.
        MethodNotAllowed = "method_not_allowed",
        /// 409: the request conflicts with the current state.
        Conflict = "conflict",
        /// 409: another operation of the conversation holds it (`when_busy: reject`).
        TopicBusy = "topic_busy",
        /// 409: the operation is running, in this process or another one — possibly one that
        /// stopped without letting go, whose lease runs out within `Retry-After` seconds.
        /// Nothing was applied; the same request may succeed then (unlike `conflict`, which
        /// says the request no longer fits, such as a decision already made).
        OperationBusy = "operation_busy",
        /// 409: the operation was started with tools this server does not have.
        MissingTools = "missing_tools",
        /// 409: a replay of a step that made no model call (or of an operation that made
        /// none, recorded by an older rein, or whose state leads another model elsewhere).
        ReplayDoesNotFit = "replay_does_not_fit",
        /// 409: a fork at a step that cannot start one (the operation waited or had ended
        /// after it, it is a sub-agent or an external agent's, or an older rein recorded it).
        ForkDoesNotFit = "fork_does_not_fit",
        /// 409: the operation stopped without an answer (`details.reason` says why).
        OperationStopped = "operation_stopped",
        /// 413.
        PayloadTooLarge = "payload_too_large",
        /// 414.
        UriTooLong = "uri_too_long",
        /// 415.
        UnsupportedMediaType = "unsupported_media_type",
        /// 421: a request whose `Host` is missing or not this server's (DNS rebinding).
        MisdirectedRequest = "misdirected_request",
        /// 422: well-formed but not acceptable.
        Unprocessable = "unprocessable",
        /// 422: no input where one is needed.
        InputMissing = "input_missing",
        /// 422: an agent and a group named together.
        AgentAndGroup = "agent_and_group",
        /// 422: no such agent of the caller's.
        AgentMissing = "agent_missing",
        /// 422: no such group of the caller's.
        GroupMissing = "group_missing",
        /// 422: no such device of the caller's.
        DeviceMissing = "device_missing",
        /// 422: no such knowledge base of the caller's.
        KnowledgeMissing = "knowledge_missing",
        /// 422: no such skill on this server.
        SkillMissing = "skill_missing",
        /// 422: no such uploaded file of the caller's (never theirs, or deleted).
        FileMissing = "file_missing",
        /// 422: no such message in the conversation.
        MessageMissing = "message_missing",
        /// 422: no such committed step of the operation.
        StepMissing = "step_missing",
        /// 422: the model cannot be reached from this server.
        ModelUnavailable = "model_unavailable",
        /// 422: a cost limit with a model nothing prices.
        ModelUnpriced = "model_unpriced",
        /// 422: an MCP server of the caller's that does not answer or cannot be used (or
        /// cannot be defined: its origin is not allowed, it does not answer).
        McpUnavailable = "mcp_unavailable",
        /// 422: a surface this server does not offer.
        SurfaceUnavailable = "surface_unavailable",
        /// 422: a remote A2A agent rein may not or cannot use: its address (not http(s), or a
        /// private one this server does not reach), its card (not there, not A2A 1.x
        /// JSON-RPC), or the agent itself (unreachable).
        RemoteAgentUnusable = "remote_agent_unusable",
        /// 422: the external agent's program is missing.
        ExternalMissing = "external_missing",
        /// 422: an edit or regeneration that does not fit the conversation.
        BranchDoesNotFit = "branch_does_not_fit",
        /// 422: an OpenAI-style conversation rein cannot continue (its last message is not the
        /// user's, ...).
        InvalidConversation = "invalid_conversation",
        /// 422: a decision that does not fit its call.
        DecisionDoesNotFit = "decision_does_not_fit",
        /// 422: "always" asked for a call the blacklist or the guard flagged.
        GrantNotAllowed = "grant_not_allowed",
        /// 422: a grant that does not fit its call.
        GrantDoesNotFit = "grant_does_not_fit",
        /// 422: a tool rule that cannot be used.
        InvalidToolRule = "invalid_tool_rule",
        /// 422: prices that cannot be used.
        InvalidPrices = "invalid_prices",
        /// 422: a task that cannot be made as asked.
        InvalidTask = "invalid_task",
        /// 422: a brief resolution that does not fit the brief.
        InvalidResolution = "invalid_resolution",
        /// 422: a brief hook URL or secret that cannot be used.
        InvalidHook = "invalid_hook",
        /// 422: a brief hook whose URL reaches a loopback, private or link-local address.
        HookInternal = "hook_internal",
        /// 409: a login from another device that nobody approved yet: poll again after
        /// `interval` seconds (OAuth's device grant names it the same).
        AuthorizationPending = "authorization_pending",
        /// 404: a login from another device that expired, or whose token was already received.
        ExpiredToken = "expired_token",
        /// 429: the caller's daily or monthly cost cap is spent (`details` name it and when it
        /// resets; `Retry-After` says when).
        SpendCapReached = "spend_cap_reached",
        /// 429: too many failed sign-ins of this name; `Retry-After` says when to try again.
        TooManyAttempts = "too_many_attempts",
        /// 429: too many logins from other devices wait for approval.
        TooManyLogins = "too_many_logins",
        /// 429: too many operations running.
        TooManyRunning = "too_many_running",
        /// 500: a failure on the server's side (logged).
        Internal = "internal",
        /// 502: the model provider refused the server's request or could not be reached.
        ProviderFailed = "provider_failed",
        /// 503: this server is stopping and takes no new work (another replica, or this one
        /// restarted, does; `Retry-After` says when to try).
        ShuttingDown = "shutting_down",
    }
}
