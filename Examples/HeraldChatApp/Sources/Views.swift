// The example app's screens. iOS 17 APIs: NavigationStack, List, TextField, Button, .task, .refreshable,
// .onChange(of:initial:_:), ScrollViewReader; and HeraldUI's .heraldBanners modifier at the root.
#if os(iOS) || os(macOS)
import HeraldProtocol
import HeraldUI
import SwiftUI

/// Sign-in until someone is signed in; then the chats, with Herald's banners over everything.
struct RootView: View {
    let model: ChatAppModel

    var body: some View {
        if let session = model.session {
            NavigationStack {
                ConversationList(model: model)
            }
            .heraldBanners(
                session.live,
                onNavigate: { conversationID in model.open(conversationID) },
                onLocal: { notification in Task { await model.systemNotifications.post(notification) } },
                onClear: { conversationID in
                    Task { await model.systemNotifications.clear(conversation: conversationID, badge: nil) }
                },
                onWithdraw: { identifier in model.systemNotifications.withdraw(identifier) }
            )
            .task { await model.follow() }
        } else {
            SignInView(model: model)
        }
    }
}

/// The server's address and one button per demo person.
struct SignInView: View {
    @Bindable var model: ChatAppModel

    var body: some View {
        Form {
            Section("Server (herald serve --demo)") {
                TextField("http://127.0.0.1:8080", text: $model.server)
                    #if os(iOS)
                    .textInputAutocapitalization(.never)
                    .keyboardType(.URL)
                    #endif
            }
            Section("Continue as") {
                ForEach([("alice", "Alice Johnson"), ("bob", "Bob"), ("charlie", "Charlie Davis")], id: \.0) { person in
                    Button(person.1) { Task { await model.signIn(as: person.0) } }
                }
            }
            if let problem = model.problem {
                Text(problem).foregroundStyle(.red)
            }
        }
    }
}

/// The chats, newest activity first, with unread counts.
struct ConversationList: View {
    let model: ChatAppModel

    var body: some View {
        List(model.conversations, id: \.conversation.id) { summary in
            Button {
                model.open(summary.conversation.id)
            } label: {
                HStack {
                    VStack(alignment: .leading) {
                        Text(model.name(of: summary)).font(.headline)
                        Text(summary.lastMessage?.text ?? "No messages yet").font(.subheadline).foregroundStyle(.secondary)
                            .lineLimit(1)
                    }
                    Spacer()
                    if summary.unreadCount > 0 {
                        Text("\(summary.unreadCount)").font(.caption.bold()).padding(6).background(Circle().fill(.blue))
                            .foregroundStyle(.white)
                    }
                }
            }
        }
        .navigationTitle(model.session?.name ?? "Chats")
        .toolbar { Button("Sign out") { model.signOut() } }
        .refreshable { await model.refresh() }
        .navigationDestination(item: Binding(get: { model.openConversationID }, set: { model.open($0) })) { _ in
            ChatView(model: model)
        }
    }
}

/// The open chat and a composer.
struct ChatView: View {
    let model: ChatAppModel
    @State private var draft = ""

    var body: some View {
        VStack(spacing: 0) {
            ScrollViewReader { proxy in
                List(model.messages, id: \.id) { message in
                    let mine = message.senderId == model.session?.userID
                    HStack {
                        if mine { Spacer() }
                        Text(message.text ?? "📷 Image")
                            .padding(10)
                            .background(RoundedRectangle(cornerRadius: 14).fill(mine ? Color.blue : Color.gray.opacity(0.2)))
                            .foregroundStyle(mine ? .white : .primary)
                        if !mine { Spacer() }
                    }
                    .listRowSeparator(.hidden)
                    .id(message.id)
                }
                .listStyle(.plain)
                .onChange(of: model.messages.count, initial: true) { _, _ in
                    if let last = model.messages.last { proxy.scrollTo(last.id, anchor: .bottom) }
                }
            }
            HStack {
                TextField("Message", text: $draft, axis: .vertical)
                    .textFieldStyle(.roundedBorder)
                Button("Send") {
                    model.send(draft)
                    draft = ""
                }
            }
            .padding()
        }
        .navigationTitle(model.conversations.first { $0.conversation.id == model.openConversationID }.map { model.name(of: $0) } ?? "")
        .task(id: model.openConversationID) { await model.loadMessages() }
    }
}
#endif
